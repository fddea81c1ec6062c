/**
 * Part of `npm run docs`: writes docs/errors.md, the catalogue of every error code and exit code
 * (scripts/error-docs.ts). test/error-catalogue.test.ts fails when the checked-in page is stale.
 */
import { writeFileSync } from 'node:fs';
import { ERRORS_PAGE, readErrorCatalogue, renderErrorsPage } from './error-docs.js';

writeFileSync(ERRORS_PAGE, renderErrorsPage(await readErrorCatalogue()));
process.stdout.write(`wrote ${ERRORS_PAGE}\n`);
