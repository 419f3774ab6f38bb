-- DropIndex
DROP INDEX "post_status_idx";

-- DropIndex
DROP INDEX "post_pozy_updated_at_idx";

-- AlterTable
ALTER TABLE "post" ADD COLUMN     "error_categories" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "extra" JSONB,
ADD COLUMN     "has_media" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "hashtags" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "title" TEXT,
ADD COLUMN     "visibility" TEXT;

-- AlterTable
ALTER TABLE "account" ADD COLUMN     "enabled" BOOLEAN,
ADD COLUMN     "extra" JSONB;

-- CreateIndex
CREATE INDEX "post_pozy_updated_at_id_idx" ON "post"("pozy_updated_at", "id");

-- CreateIndex
CREATE INDEX "post_scheduled_for_id_idx" ON "post"("scheduled_for", "id");

-- CreateIndex
CREATE INDEX "post_published_at_id_idx" ON "post"("published_at", "id");

-- CreateIndex
CREATE INDEX "post_tags_idx" ON "post" USING GIN ("tags");

-- CreateIndex
CREATE INDEX "post_hashtags_idx" ON "post" USING GIN ("hashtags");

-- CreateIndex
CREATE INDEX "post_error_categories_idx" ON "post" USING GIN ("error_categories");

-- CreateIndex
CREATE INDEX "post_visibility_id_idx" ON "post"("visibility", "id");

-- CreateIndex
CREATE INDEX "post_has_media_id_idx" ON "post"("has_media", "id");

-- Written by hand (Prisma declares no expression indexes; see the note at the top of schema.prisma): GET /posts?q=
-- searches title and content with PostgreSQL's full-text search in the `simple` configuration (no stemming, no stop
-- words: every language is split into words the same way). src/mirror/posts/post-search.ts builds the very same
-- expression, which is what lets the planner use this index.
CREATE INDEX "post_search_idx" ON "post" USING GIN (to_tsvector('simple'::regconfig, coalesce("title", '') || ' ' || coalesce("content", '')));

-- A word's frequency is known only for the lexemes ANALYZE keeps (100 times the statistics target). At the default,
-- with a unique lexeme or two per post, a rare word looked a hundred times more common than it is, and the planner
-- walked the primary key recomputing every post's text (1.5 s on 500,000 posts) instead of reading this index (20 ms).
ALTER INDEX "post_search_idx" ALTER COLUMN 1 SET STATISTICS 1000;
