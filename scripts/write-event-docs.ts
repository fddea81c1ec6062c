/**
 * Part of `npm run docs`: writes the table of event types in docs/events.md from their declarations
 * (src/events/run-events.ts), between the page's marker comments, the rest of the page untouched.
 * src/events/event-docs.test.ts fails when the checked-in page is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { withEventsTable } from '../src/events/event-docs.js';

const page = resolve(import.meta.dirname, '../docs/events.md');
writeFileSync(page, withEventsTable(readFileSync(page, 'utf8')));
process.stdout.write(`wrote the event types in ${page}\n`);
