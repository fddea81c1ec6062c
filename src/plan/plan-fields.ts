/**
 * Plan version 1, field by field: the one table the loader walks (schema.ts) and the JSON Schema is
 * generated from (schema/plan.schema.json, `npm run schema`). Ranges live here too; the named rules
 * (rules.ts) check them from this table. To add a field, add an entry here and
 * nothing else: the Plan type (types.ts), the walker, the defaults, the range rule, the JSON Schema
 * and docs/plan.md follow.
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import { OAUTH_FIELDS, OAUTH_SECRETS, readCredentials } from './credentials.js';
import { formatPlanDuration } from '../time/durations.js';
import type { FieldDoc, FieldTable, JsonSchema, SectionContext } from './field-table.js';
import { duration, integer, readEnum } from './fields.js';
import { ONLY_VAR_REFS, VAR_STRING, isSet, nullable, textSchema } from './json-schema.js';
import { WINDOW_PATTERN } from '../time/windows.js';
import { CHECKPOINT_DOC, CHECKPOINT_SCHEMA, readCheckpoint } from './checkpoint-field.js';
import { PAUSE_AFTER_DOC, PAUSE_AFTER_SCHEMA, readPauseAfter } from './breaker-field.js';
import { VERIFY_DOC, VERIFY_SCHEMA, readVerify } from './verify-field.js';
import type { VerifySetting } from './verify-field.js';
import { readNumber, readSchedule } from './schedule-fields.js';
import { DEFAULT_EXPOSURE_BUDGET, QUEUE_AHEAD_RANGE, QUEUE_AHEAD_SCHEMA, readQueueAhead } from './queue-ahead-field.js';
import {
  AUTO_CONCURRENCY_DEFAULTS,
  CONCURRENCY_RANGE,
  CONCURRENCY_SCHEMA,
  readConcurrency,
} from './concurrency-field.js';
import type { PlanConcurrency } from './concurrency-field.js';
import { CAPACITY_DOC, CAPACITY_SCHEMA, readCapacity } from './capacity-field.js';
import {
  DESTINATIONS_DOC,
  DESTINATIONS_SCHEMA,
  STORAGE_SCHEMA,
  UNTIL_DOC,
  UNTIL_SCHEMA,
  readDestinations,
  readStorageList,
  readUntil,
} from './target-fields.js';
import {
  PROMETHEUS_TOKEN_SCHEMA,
  RULES_DOC,
  RULES_SCHEMA,
  readPrometheusToken,
  readPrometheusUrl,
  readRules,
} from './rules-field.js';
import { NOTIFY_DOC, NOTIFY_SCHEMA, readNotify } from './notify-field.js';
import type { Reader } from './reader.js';
import { SELECT_DOC, SELECT_SCHEMA, readSelect } from './select-field.js';
import type { Kind } from './values.js';
import { KINDS, MOVE_ORDERS, THROTTLE_DEFAULTS } from './values.js';

const NAME_RE = /^[a-z0-9][a-z0-9_-]*$/;
const DAY = 86_400_000;
/** The shortest poll gap a plan gets without writing one: 250ms, or poll.interval if that is shorter. */
export const DEFAULT_MIN_INTERVAL_MS = 250;
/** A storage weight, as `repository_storages_weighted` takes it. */
export const WEIGHT_RANGE = { min: 0, max: 100 } as const;

const WEIGHT_SCHEMA: JsonSchema = {
  anyOf: [{ type: 'integer', minimum: WEIGHT_RANGE.min, maximum: WEIGHT_RANGE.max }, VAR_STRING],
};

/** The fields of a plan, in reading (and documentation) order. */
export const PLAN_FIELDS = {
  version: {
    type: 'custom',
    prop: 'version',
    required: true,
    default: 1,
    description: 'Plan format version; this shardmove reads version 1.',
    doc: { type: 'integer', allowed: '`1`' },
    read: readVersion,
    schema: { const: 1 },
  },
  name: {
    type: 'custom',
    prop: 'name',
    required: true,
    default: '',
    description:
      'Names the checkpoint (state/<name>.db beside the plan file) and the log (state/<name>.log). [a-z0-9][a-z0-9_-]*, at most 100 characters.',
    doc: { type: 'string', allowed: '`[a-z0-9][a-z0-9_-]*`, at most 100 characters' },
    read: readName,
    schema: textSchema({ pattern: NAME_RE.source, maxLength: 100 }),
  },
  // Absent stays absent (default undefined), and it is left out of the plan's hash: where the
  // checkpoint lives is no change of what the run does.
  checkpoint: {
    type: 'custom',
    prop: 'checkpoint',
    default: undefined,
    description:
      "Where the checkpoint lives, relative to the plan file (default state/<name>.db beside it); its log, dry run's and revert's files take their names from it. A literal path: no ${VAR}.",
    read: (r, node, path) => readCheckpoint(r, node, path),
    doc: CHECKPOINT_DOC,
    schema: CHECKPOINT_SCHEMA,
  },
  instance: {
    type: 'section',
    prop: 'instance',
    required: true,
    description: 'The GitLab instance and how to authenticate to it.',
    fields: {
      url: {
        type: 'custom',
        prop: 'url',
        required: true,
        default: '',
        description:
          "The instance's base URL, e.g. https://gitlab.example.com (http:// or https://, no credentials, query or fragment).",
        doc: {
          type: 'URL',
          allowed: '`http://` or `https://`, no credentials, query or fragment',
          more: 'A trailing `/` is dropped; a trailing `/api/v4` is dropped with a warning.',
        },
        read: readUrl,
        // new URL() decides in the loader; this is the same rule for the URLs people write.
        schema: textSchema({ pattern: '^\\s*[hH][tT][tT][pP][sS]?://[^\\s/?#@\\\\:][^\\s/?#@\\\\]*(?:/[^?#]*)?\\s*$' }),
      },
      credentials: {
        type: 'group',
        prop: 'credentials',
        default: { type: 'token', token: '' },
        description: 'Exactly one of token, token_file, oauth.',
        members: {
          token: {
            description: 'An admin access token, written as ${VAR} only: never the token itself.',
            schema: { type: 'string', pattern: ONLY_VAR_REFS },
            doc: {
              type: '`${VAR}`',
              default: 'one credential is required',
              allowed: 'only `${VAR}` references',
              more: 'A personal (or other admin) access token.',
            },
          },
          token_file: {
            description: "A file holding the token (relative to the plan's directory); chmod 600.",
            schema: textSchema(),
            doc: {
              type: 'path',
              allowed: 'readable, non-empty file',
              more: "The token is the file's content, trimmed.",
            },
          },
          oauth: {
            description: 'OAuth access and refresh tokens, refreshed automatically.',
            schema: oauthSchema(),
            doc: { type: 'mapping', allowed: 'see [OAuth](#oauth)' },
          },
        },
        read: (r, entries, pos, invalid) => {
          const c = readCredentials(r, entries, pos);
          if (!c) invalid.add('instance.credentials');
          return c ?? undefined;
        },
        schema: { oneOf: [isSet('token'), isSet('token_file'), isSet('oauth')] },
      },
      sudo: {
        type: 'custom',
        prop: 'sudo',
        default: null,
        description: 'A user id or username to act as (Sudo header), or null.',
        doc: {
          type: 'string or integer',
          allowed: 'a user id or a username (no spaces)',
          more: 'Integers become strings.',
        },
        read: (r, node) => readSudo(r, node) ?? null,
        schema: { anyOf: [{ type: 'integer', minimum: 1 }, textSchema({ pattern: '^\\s*\\S+\\s*$' })] },
      },
      timeout: {
        type: 'duration',
        prop: 'timeoutMs',
        default: 30_000,
        min: 1_000,
        max: 600_000,
        description: 'Per-request timeout.',
      },
      outage_wait: {
        type: 'duration',
        prop: 'outageWaitMs',
        default: 1_800_000,
        min: 1_000,
        max: 86_400_000,
        description:
          'How long the run holds while the instance does not answer (network errors, timeouts, 502/503/504) before it ends with exit 7.',
      },
    },
  },
  move: {
    type: 'section',
    prop: 'move',
    required: true,
    description: 'What moves where, and how fast.',
    fields: {
      from: {
        type: 'custom',
        prop: 'from',
        required: true,
        default: [],
        description: 'Source storages, drained in this order; each once, not the destination.',
        doc: { type: 'list of storage names', allowed: 'at least one, each once, not the destination' },
        read: (r, node, path) => readStorageList(r, node, path, 'source storage'),
        schema: { type: 'array', items: STORAGE_SCHEMA, minItems: 1, uniqueItems: true },
      },
      to: {
        type: 'custom',
        prop: 'to',
        required: true,
        default: [] as string[],
        description: 'Destination storage, or a list of them; sent explicitly with every move; none of them a source.',
        doc: DESTINATIONS_DOC,
        read: (r, node, path) => readDestinations(r, node, path),
        schema: DESTINATIONS_SCHEMA,
      },
      until: {
        type: 'custom',
        prop: 'until',
        default: undefined,
        description:
          'A partial drain: {moved: SIZE} stops scheduling from each source once that many bytes have left it; {free: SIZE} once its free space reaches that. Absent: drain every source empty.',
        doc: UNTIL_DOC,
        read: (r, node, path) => readUntil(r, node, path),
        schema: UNTIL_SCHEMA,
      },
      select: {
        type: 'custom',
        prop: 'select',
        default: undefined,
        description:
          'Which items move: {namespaces: [full paths], projects: [ids or full paths], exclude: [ids or full paths], file: PATH}. Absent: every item on the sources.',
        doc: SELECT_DOC,
        read: (r, node, path) => readSelect(r, node, path),
        schema: SELECT_SCHEMA,
      },
      kinds: {
        type: 'custom',
        prop: 'kinds',
        default: KINDS,
        description: 'Repository kinds to move (groups = group wikis), each at most once.',
        doc: { type: 'list', allowed: `${KINDS.map((k) => `\`${k}\``).join(', ')}, each at most once` },
        read: (r, node) => readKinds(r, node),
        schema: { type: 'array', items: textSchema({ enum: [...KINDS] }), minItems: 1, uniqueItems: true },
      },
      mode: {
        type: 'enum',
        prop: 'mode',
        values: ['throttled', 'bulk'],
        default: 'throttled',
        description:
          'throttled: one move per item, at most `concurrency` in flight. bulk: one POST per kind and storage, paced by the instance.',
        doc: { more: 'A bulk plan has no cap and is warned about ([named rules](#named-rules)).' },
      },
      concurrency: {
        type: 'custom',
        prop: 'concurrency',
        default: 10 as PlanConcurrency,
        description:
          'Moves in flight in throttled mode; `auto` (or `{auto: {min, max}}`) lets the drain choose the cap from the throughput it measures, raising it while throughput grows and lowering it when moves only get slower.',
        doc: {
          type: 'integer or `auto`',
          allowed: `\`${CONCURRENCY_RANGE.min}\` to \`${CONCURRENCY_RANGE.max}\`; or \`auto\`, \`{auto: {min, max}}\` (defaults ${AUTO_CONCURRENCY_DEFAULTS.min} and ${AUTO_CONCURRENCY_DEFAULTS.max})`,
          more: 'Changeable mid-run with `shardmove control` (`--concurrency auto` hands a pinned cap back to the limiter). In bulk mode it does not limit the bulk POST, only the per-item retries after it. See [move.concurrency: auto](operations.md#moveconcurrency-auto).',
        },
        read: (r, node, path) => readConcurrency(r, node, path),
        schema: CONCURRENCY_SCHEMA,
      },
      queue_ahead: {
        type: 'custom',
        prop: 'queueAhead',
        default: 0 as number | 'auto',
        description:
          'Successors POSTed early, beyond `concurrency`, for moves expected to end within the measured refill round trip; `auto` chooses how many from that round trip and the rate at which moves end.',
        doc: {
          type: 'integer or `auto`',
          allowed: `\`${QUEUE_AHEAD_RANGE.min}\` to \`${QUEUE_AHEAD_RANGE.max}\`, at most \`concurrency\`; or \`auto\``,
          more: "Throttled mode only. A successor waits in the instance's queue (its repository read-only) until the slot frees; see [queue ahead](../README.md#queue-ahead) and [when to write a number](operations.md#queue-ahead-auto-or-a-number).",
        },
        read: readQueueAhead,
        schema: QUEUE_AHEAD_SCHEMA,
      },
      exposure_budget: {
        type: 'custom',
        prop: 'exposureBudget',
        default: undefined,
        description:
          'With `queue_ahead: auto`: the read-only time allowed per unit of move time (a successor queued early is read-only while it waits), 1 to 10.',
        doc: {
          type: 'number',
          default: `\`${DEFAULT_EXPOSURE_BUDGET}\``,
          allowed: '`1` to `10`',
          more: 'Read only with `queue_ahead: auto`; `1` posts nothing early.',
        },
        read: readNumber(1, 10),
        schema: numberSchema(1, 10),
      },
      order: {
        type: 'custom',
        prop: 'order',
        default: undefined,
        description:
          "together: every kind on every source in one largest-first schedule. by-kind: one drain per source and kind, in the plan's order (the order before the one schedule).",
        doc: {
          type: 'string',
          default: '`together`',
          allowed: '`together`, `by-kind`',
          more: 'Throttled mode only (bulk mode drains kind by kind). See [one schedule](operations.md#one-schedule-for-the-whole-drain).',
        },
        read: (r, node, path) => readEnum(r, node, path, MOVE_ORDERS),
        schema: textSchema({ enum: [...MOVE_ORDERS] }),
      },
    },
  },
  weights: {
    type: 'custom',
    prop: 'weights',
    default: {},
    description:
      "Storage name to weight (0-100), merged into the instance's repository_storages_weighted. Default: destination 100, every source 0.",
    doc: {
      type: 'mapping storage -> integer',
      default: 'destination `100`, every source `0`',
      allowed: `each weight \`${WEIGHT_RANGE.min}\` to \`${WEIGHT_RANGE.max}\``,
      more: 'Written before the drain (see [Weights](#weights)).',
    },
    read: readWeights,
    schema: { type: 'object', additionalProperties: WEIGHT_SCHEMA },
  },
  poll: {
    type: 'section',
    prop: 'poll',
    description: 'How often moves are polled, and when a move counts as stuck.',
    fields: {
      interval: {
        type: 'duration',
        prop: 'intervalMs',
        default: 5_000,
        min: 100,
        max: 3_600_000,
        description: 'The longest wait between two polls while moves are in flight.',
      },
      min_interval: {
        type: 'duration',
        prop: 'minIntervalMs',
        default: DEFAULT_MIN_INTERVAL_MS,
        min: 10,
        max: 3_600_000,
        description:
          "The shortest wait between two polls, when the completion prediction expects a move to end sooner or a kind's first moves are looked at before it can predict (default 250ms, or poll.interval if that is shorter). Must not exceed poll.interval.",
        doc: {
          allowed: 'not above `poll.interval`',
          more: 'See [Keeping the move slots full](operations.md#keeping-the-move-slots-full).',
        },
      },
      stuck_scheduled_after: {
        type: 'duration',
        prop: 'stuckScheduledAfterMs',
        default: DAY,
        min: 1_000,
        max: 30 * DAY,
        description: 'A move still queued (initial/scheduled) this long after it was first seen is reported as stuck.',
        doc: {
          more: "GitLab's move worker is a throttled Sidekiq job, so hours in the queue on a busy instance are normal.",
        },
      },
      stuck_running_after: {
        type: 'duration',
        prop: 'stuckRunningAfterMs',
        default: 3_600_000,
        min: 1_000,
        max: 7 * DAY,
        description: 'A move running longer than this plus the size allowance is reported as stuck.',
        doc: {
          allowed: 'below `1m` is warned about',
          more: 'Counted from when it was first seen running (`started`/`replicated`); time in the queue never counts.',
        },
      },
      stuck_running_per_gb: {
        type: 'duration',
        prop: 'stuckRunningPerGbMs',
        default: 1_800_000,
        min: 0,
        max: DAY,
        description: 'Added to the running limit per GiB of repository, when the size is known.',
        doc: { more: 'The instance reports sizes for projects.' },
      },
      stuck_after: {
        type: 'duration',
        default: 3_600_000,
        min: 1_000,
        max: 7 * DAY,
        description: 'Old name of stuck_running_after (no size allowance unless stuck_running_per_gb is set).',
        deprecated: 'write poll.stuck_running_after.',
        doc: { more: 'Warned about; it cannot be written together with `stuck_running_after`.' },
      },
    },
    finish: (ctx) => {
      readLegacyStuckAfter(ctx);
      defaultMinInterval(ctx);
    },
    schema: { not: { allOf: [isSet('stuck_after'), isSet('stuck_running_after')] } },
  },
  retry: {
    type: 'section',
    prop: 'retry',
    description: 'Retries of failed moves, per item.',
    fields: {
      max_attempts: {
        type: 'integer',
        prop: 'maxAttempts',
        default: 3,
        min: 1,
        max: 100,
        description: 'Attempts per item, the first included, before it is quarantined.',
      },
      backoff: {
        type: 'duration',
        prop: 'backoffMs',
        default: 30_000,
        min: 0,
        max: DAY,
        description: 'Wait before retrying a failed move.',
      },
      pause_after: {
        type: 'custom',
        prop: 'pauseAfter',
        default: undefined,
        description:
          'The failure breaker: {failures: N, within: DURATION}. When N moves fail within that window the run pauses as `shardmove control --pause` does, until unpaused. Absent: off.',
        doc: PAUSE_AFTER_DOC,
        read: (r, node, path, invalid) => readPauseAfter(r, node, path, invalid),
        schema: PAUSE_AFTER_SCHEMA,
      },
    },
  },
  verify: {
    type: 'custom',
    prop: 'verify',
    default: true as VerifySetting,
    description:
      'Check afterwards that every item really is on the destination; with content, also compare a sample of the moved repositories before and after.',
    doc: VERIFY_DOC,
    read: (r, node, path, invalid) => readVerify(r, node, path, invalid),
    schema: VERIFY_SCHEMA,
  },
  geo: {
    type: 'section',
    prop: 'geo',
    description: 'Geo replication.',
    fields: {
      resync: {
        type: 'boolean',
        prop: 'resync',
        default: false,
        description: "After verify, resync the moved kinds' Geo registries (RESYNC_ALL).",
      },
    },
  },
  // Absent stays absent (default undefined): a plan without them hashes as it always did.
  schedule: {
    type: 'custom',
    prop: 'schedule',
    default: undefined,
    description:
      'Maintenance windows: new moves are scheduled only inside them. {timezone: IANA name (UTC when absent), windows: ["Mon-Fri 22:00-06:00", "Sat 00:00-Mon 00:00", "daily 01:00-03:00"]}.',
    read: (r, node, _path, invalid) => readSchedule(r, node, invalid) ?? undefined,
    doc: scheduleDoc(),
    schema: scheduleSchema(),
  },
  prometheus: {
    type: 'section',
    prop: 'prometheus',
    offWhenAbsent: true,
    description: "The operator's Prometheus, which throttle.rules query (HTTP API, /api/v1/query). Off when absent.",
    doc: {
      type: 'mapping',
      default: 'absent (off)',
      more: 'See [rules on Prometheus](operations.md#rules-and-room-from-prometheus).',
    },
    fields: {
      url: {
        type: 'custom',
        prop: 'url',
        required: true,
        default: '',
        description:
          "Prometheus' base URL, e.g. http://localhost:9090 (http:// or https://, no credentials, query or fragment).",
        doc: { type: 'URL', allowed: '`http://` or `https://`, no credentials, query or fragment' },
        read: (r, node, path) => readPrometheusUrl(r, node, path),
        schema: textSchema({ pattern: '^\\s*[hH][tT][tT][pP][sS]?://[^\\s/?#@\\\\:][^\\s/?#@\\\\]*(?:/[^?#]*)?\\s*$' }),
      },
      credentials: {
        type: 'group',
        prop: 'token',
        default: null,
        description: 'An optional bearer token: token or token_file, not both.',
        members: {
          token: {
            description: 'A bearer token, written as ${VAR} only.',
            schema: PROMETHEUS_TOKEN_SCHEMA,
            doc: {
              type: '`${VAR}`',
              default: 'none',
              allowed: 'only `${VAR}` references',
              more: 'Sent as `Authorization: Bearer`.',
            },
          },
          token_file: {
            description: "A file holding the bearer token (relative to the plan's directory); chmod 600.",
            schema: textSchema(),
            doc: {
              type: 'path',
              default: 'none',
              allowed: 'readable, non-empty file',
              more: "The token is the file's content, trimmed.",
            },
          },
        },
        read: (r, entries, _pos, invalid) => {
          const t = readPrometheusToken(r, entries);
          if (t === undefined) invalid.add('prometheus.token');
          return t ?? null;
        },
        schema: { not: { allOf: [isSet('token'), isSet('token_file')] } },
      },
      timeout: {
        type: 'duration',
        prop: 'timeoutMs',
        default: 10_000,
        min: 1_000,
        max: 600_000,
        description: 'Per-query timeout.',
      },
      on_error: {
        type: 'enum',
        prop: 'onError',
        values: ['pause', 'ignore'],
        default: 'pause',
        description:
          'Prometheus unreachable, or a query that errors: pause the run until it answers again, or ignore the rules it could not read.',
        doc: { more: 'Either way the run never stops by itself; the message says what failed.' },
      },
    },
  },
  throttle: {
    type: 'section',
    prop: 'throttle',
    offWhenAbsent: true,
    description:
      'Load-aware cap under move.concurrency: cut on Gitaly health, latency, failed moves, 429s and slowdowns, grown back slowly. Off when absent; `throttle: {}` turns it on with the defaults.',
    doc: {
      type: 'mapping',
      default: 'absent (off)',
      more: 'See [the throttle](operations.md#maintenance-windows-and-the-throttle).',
    },
    fields: {
      // A p90 under 10ms is below any API round trip, so every sample would cut the cap; one above
      // instance.timeout's ceiling is never measured, since requests end there.
      latency_p90: {
        type: 'duration',
        prop: 'latencyP90Ms',
        default: THROTTLE_DEFAULTS.latencyP90Ms,
        min: 10,
        max: 600_000,
        description: 'API latency (p90 of recent requests) above which the cap is cut.',
      },
      max_failure_rate: {
        type: 'custom',
        prop: 'maxFailureRate',
        default: THROTTLE_DEFAULTS.maxFailureRate,
        description: 'Share of recent moves that failed, above which the cap is cut (0 to 1).',
        read: readNumber(0, 1),
        schema: numberSchema(0, 1),
        doc: { type: 'number', allowed: '`0` to `1`' },
      },
      max_429_rate: {
        type: 'custom',
        prop: 'max429Rate',
        default: THROTTLE_DEFAULTS.max429Rate,
        description: 'Share of recent answers that were 429, above which the cap is cut (0 to 1).',
        read: readNumber(0, 1),
        schema: numberSchema(0, 1),
        doc: { type: 'number', allowed: '`0` to `1`' },
      },
      duration_drift: {
        type: 'custom',
        prop: 'durationDrift',
        default: THROTTLE_DEFAULTS.durationDrift,
        description:
          "Recent median move duration over the first moves' median, above which the cap is cut (1 to 1000).",
        read: readNumber(1, 1000),
        schema: numberSchema(1, 1000),
        doc: { type: 'number', allowed: '`1` to `1000`' },
      },
      // 0 read /-/readiness at every scheduling pass and grew the cap back at every one, which
      // undoes each cut at once. 100ms is poll.interval's floor: nothing in a run happens more often.
      health_every: {
        type: 'duration',
        prop: 'healthEveryMs',
        default: THROTTLE_DEFAULTS.healthEveryMs,
        min: 100,
        max: 3_600_000,
        description:
          'How often /-/readiness is read; an unhealthy source or destination pauses scheduling until it recovers.',
      },
      increase_every: {
        type: 'duration',
        prop: 'increaseEveryMs',
        default: THROTTLE_DEFAULTS.increaseEveryMs,
        min: 100,
        max: 3_600_000,
        description: 'Time without a bad signal before the cap grows by one.',
      },
      decrease: {
        type: 'custom',
        prop: 'decrease',
        default: THROTTLE_DEFAULTS.decrease,
        description: 'What a bad signal multiplies the cap by, at most once per poll interval (0.05 to 0.95).',
        read: readNumber(0.05, 0.95),
        schema: numberSchema(0.05, 0.95),
        doc: { type: 'number', allowed: '`0.05` to `0.95`' },
      },
      rules: {
        type: 'custom',
        prop: 'rules',
        default: undefined,
        description:
          "PromQL rules on the operator's Prometheus, read every health_every: {name, query, above | below, action: pause | cut, for}.",
        doc: RULES_DOC,
        read: (r, node, path, invalid) => readRules(r, node, path, invalid),
        schema: RULES_SCHEMA,
      },
    },
  },
  capacity: {
    type: 'custom',
    prop: 'capacity',
    default: undefined,
    description:
      'Room on the receiving storages: {keep_free: bytes, storages: {<name>: {free: size | PromQL}}}. Checked in pre-flight before any write, and watched during the run. Absent: the room is not checked.',
    doc: CAPACITY_DOC,
    read: (r, node, path) => readCapacity(r, node, path),
    schema: CAPACITY_SCHEMA,
  },
  // Absent stays absent, and it is left out of the plan's hash: where the run's events go changes
  // nothing it does, so a pager added mid-migration needs no --accept-plan-change.
  notify: {
    type: 'custom',
    prop: 'notify',
    default: undefined,
    description:
      "Notifications and hooks: a list of {on: [event names] or ['*'], webhook: {url, format: json | slack, token | token_file} or exec: [argv], timeout}. Deliveries are kept in the checkpoint and retried until they are delivered.",
    doc: NOTIFY_DOC,
    read: (r, node, path, invalid) => readNotify(r, node, path, invalid),
    schema: NOTIFY_SCHEMA,
  },
} as const satisfies FieldTable;

function scheduleSchema(): JsonSchema {
  return {
    type: 'object',
    properties: {
      timezone: nullable(textSchema()),
      windows: { type: 'array', minItems: 1, items: textSchema({ pattern: WINDOW_PATTERN }) },
    },
    required: ['windows'],
    additionalProperties: false,
  };
}

/** A number in [min, max], or a ${VAR} whose text is one. */
function numberSchema(minimum: number, maximum: number): JsonSchema {
  return { anyOf: [{ type: 'number', minimum, maximum }, VAR_STRING] };
}

function scheduleDoc(): FieldDoc {
  return {
    type: 'mapping',
    default: 'absent (off)',
    more: 'See [maintenance windows](operations.md#maintenance-windows-and-the-throttle).',
    keys: {
      timezone: {
        type: 'IANA zone',
        default: '`UTC`',
        allowed: "any zone the platform's `Intl` knows",
        meaning: 'The zone the windows are read in.',
      },
      windows: {
        type: 'list of strings',
        default: 'required with `schedule`',
        allowed: '`"Mon-Fri 22:00-06:00"`, `"Sat 00:00-Mon 00:00"`, `"daily 01:00-03:00"`',
        meaning: 'New moves (retries included) are scheduled only inside these windows.',
      },
    },
  };
}

function oauthSchema(): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const f of OAUTH_FIELDS) {
    properties[f] = nullable(
      OAUTH_SECRETS.has(f) ? { type: 'string', pattern: ONLY_VAR_REFS } : textSchema({ pattern: '\\S' }),
    );
    properties[`${f}_file`] = nullable(textSchema());
  }
  return {
    type: 'object',
    properties,
    additionalProperties: false,
    allOf: OAUTH_FIELDS.map((f) => ({ oneOf: [isSet(f), isSet(`${f}_file`)] })),
  };
}

function readVersion(r: Reader, node: Node): 1 {
  r.mark('version', r.posOf(node));
  if (!isScalar(node) || node.value !== 1)
    r.error('version', r.posOf(node), 'unsupported plan version; this shardmove reads version: 1');
  return 1;
}

function readName(r: Reader, node: Node): string | undefined {
  r.mark('name', r.posOf(node));
  const s = r.string(node, 'name');
  if (!s) return undefined;
  if (!NAME_RE.test(s.value) || s.value.length > 100) {
    r.error(
      'name',
      r.posOf(node),
      'must match [a-z0-9][a-z0-9_-]* (at most 100 characters): it names the checkpoint file',
    );
    return undefined;
  }
  return s.value;
}

function readUrl(r: Reader, node: Node): string | undefined {
  const at = r.posOf(node);
  r.mark('instance.url', at);
  const s = r.string(node, 'instance.url');
  if (!s) return undefined;
  let u: URL;
  try {
    u = new URL(s.value.trim());
  } catch {
    r.error('instance.url', at, 'not a valid URL; expected e.g. https://gitlab.example.com');
    return undefined;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    r.error('instance.url', at, 'must be an http:// or https:// URL');
    return undefined;
  }
  if (u.username || u.password) {
    r.error('instance.url', at, 'must not contain credentials; use token, token_file or oauth');
    return undefined;
  }
  if (u.search || u.hash) {
    r.error('instance.url', at, 'must not have a query or fragment');
    return undefined;
  }
  let path = u.pathname.replace(/\/+$/, '');
  if (/\/api\/v4$/.test(path)) {
    path = path.slice(0, -'/api/v4'.length);
    r.warn('instance.url', at, "write the instance's base URL; the /api/v4 suffix was removed");
  }
  return `${u.protocol}//${u.host}${path}`;
}

function readSudo(r: Reader, node: Node): string | undefined {
  const at = r.posOf(node);
  r.mark('instance.sudo', at);
  if (isScalar(node) && typeof node.value === 'number') {
    if (Number.isInteger(node.value) && node.value > 0) return String(node.value);
    r.error('instance.sudo', at, 'expected a user id (positive integer) or a username');
    return undefined;
  }
  const s = r.string(node, 'instance.sudo');
  if (!s) return undefined;
  const v = s.value.trim();
  if (v === '' || /\s/.test(v)) {
    r.error('instance.sudo', at, 'expected a user id or a username (no spaces), or null');
    return undefined;
  }
  return v;
}

function readKinds(r: Reader, node: Node): Kind[] | undefined {
  r.mark('move.kinds', r.posOf(node));
  const items = r.seq(node, 'move.kinds', KINDS.join(', '));
  if (!items) return undefined;
  if (items.length === 0) {
    r.error('move.kinds', r.posOf(node), `list at least one of ${KINDS.join(', ')}`);
    return undefined;
  }
  const out: Kind[] = [];
  let ok = true;
  items.forEach((item, i) => {
    const path = `move.kinds[${i}]`;
    const k = readEnum(r, item, path, KINDS);
    if (k === undefined) ok = false;
    else if (out.includes(k)) {
      r.error(path, r.posOf(item), `${k} is listed twice`);
      ok = false;
    } else out.push(k);
  });
  return ok ? out : undefined;
}

/** The `weights` mapping exactly as the plan writes it; the default is merged in after the walk. */
function readWeights(r: Reader, node: Node, path: string, invalid: Set<string>): Record<string, number> {
  const planWeights: Record<string, number> = {};
  r.mark(path, r.posOf(node));
  const entries = r.record(node, path);
  if (!entries) invalid.add(path);
  for (const e of entries ?? []) {
    const p = `${path}.${e.name}`;
    r.mark(p, r.posOf(e.value, r.posOf(e.key)));
    if (Object.prototype.hasOwnProperty.call(planWeights, e.name)) {
      r.error(p, r.posOf(e.key), 'listed twice');
      continue;
    }
    const w = integer(r, e.value, p, Number.NaN, invalid);
    if (r.isNull(e.value)) r.error(p, r.posOf(e.key), 'expected a weight from 0 to 100');
    else if (!Number.isNaN(w)) planWeights[e.name] = w;
  }
  return planWeights;
}

/**
 * `stuck_after` was the one stuck limit before it was split in two, counted from scheduling, so moves queued in
 * `scheduled` on a busy instance were quarantined. It is now the deprecated name of
 * `stuck_running_after` and still works, with a warning; a plan that uses it keeps its flat running
 * limit (no allowance per GiB) unless it sets `stuck_running_per_gb`.
 */
/** An unwritten poll.min_interval never exceeds poll.interval (a 100ms interval gets a 100ms minimum). */
/**
 * The one place min_interval's default is decided: 250ms, or poll.interval when that is shorter.
 * Derived from an interval below min_interval's own range (itself refused by the range rule), it is
 * not checked again: the plan never wrote it.
 */
function defaultMinInterval({ r, entries, values, invalid, path }: SectionContext): void {
  if (!r.isNull(entries?.get('min_interval')?.value ?? null)) return;
  const derived = Math.min(DEFAULT_MIN_INTERVAL_MS, Number(values['intervalMs']));
  values['minIntervalMs'] = derived;
  if (!(derived >= PLAN_FIELDS.poll.fields.min_interval.min)) invalid.add(`${path}.min_interval`);
}

function readLegacyStuckAfter({ r, entries, values, invalid }: SectionContext): void {
  const legacy = entries?.get('stuck_after');
  if (!legacy || r.isNull(legacy.value)) return;
  const running = entries?.get('stuck_running_after')?.value ?? null;
  if (!r.isNull(running)) {
    r.error(
      'poll.stuck_after',
      r.posOf(legacy.key),
      'is the deprecated name of poll.stuck_running_after; write only stuck_running_after',
    );
    invalid.add('poll.stuck_after');
    return;
  }
  values.stuckRunningAfterMs = duration(
    r,
    legacy.value,
    'poll.stuck_after',
    values.stuckRunningAfterMs as number,
    invalid,
  );
  r.warn(
    'poll.stuck_after',
    r.posOf(legacy.key),
    'deprecated: write poll.stuck_running_after. It limits only the time a move runs (started, replicated); time queued in scheduled ' +
      `has its own limit, poll.stuck_scheduled_after (default ${formatPlanDuration(DAY)}); ` +
      'as before, no allowance per GiB of repository is added unless poll.stuck_running_per_gb is set',
  );
  // Rules about the running limit report where it is written.
  r.mark('poll.stuck_running_after', r.posOf(legacy.value));
  if (invalid.has('poll.stuck_after')) invalid.add('poll.stuck_running_after');
  if (r.isNull(entries?.get('stuck_running_per_gb')?.value ?? null)) values.stuckRunningPerGbMs = 0;
}
