import type { BackgroundMigration } from './background-migration';

/**
 * Every background data migration this release ships, oldest first; each one stays listed (a no-op once done) until
 * a contract release removes the code that reads the old shape. None yet: the first comes with the first migration
 * that must change every row of a table.
 */
export const RELEASE_BACKGROUND_MIGRATIONS: readonly BackgroundMigration[] = [];
