-- Written by hand (Prisma's schema cannot say it): no statistics for the wide columns no query filters, orders or
-- joins on. ANALYZE sorts and compares a sample of each column's values; for these (whole JSON objects and text of a
-- kilobyte or more per row) that was a third of an ANALYZE of `post`, which an import runs as the table doubles and
-- again at its end (src/database/table-statistics.ts). The planner never reads their statistics: GET /posts filters
-- on the columns derived from them (platform_names, account_ids, ...) and `q` on `search`; GET /changes on
-- profile_ids and platforms; the history by its keys.
ALTER TABLE "post"
  ALTER COLUMN "answer" SET STATISTICS 0,
  ALTER COLUMN "extra" SET STATISTICS 0,
  ALTER COLUMN "platforms" SET STATISTICS 0,
  ALTER COLUMN "content" SET STATISTICS 0;
ALTER TABLE "change" ALTER COLUMN "data" SET STATISTICS 0;
ALTER TABLE "resource_version" ALTER COLUMN "data" SET STATISTICS 0, ALTER COLUMN "event_ids" SET STATISTICS 0;
