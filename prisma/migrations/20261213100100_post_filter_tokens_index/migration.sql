-- Written by hand: the index of post_filter_tokens (previous migration), built without holding the post table
-- (the migrator runs this outside a transaction, and drops and rebuilds it if a build was cut short). The expression
-- is src/mirror/posts/post-filter-tokens.ts's, character for character, or the planner would not match it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "post_filter_tokens_idx" ON "post" USING GIN (post_filter_tokens("workspace_id", "status", "platform_names", "account_ids", "error_categories", "tags", "hashtags", "visibility", "has_media", "deleted_at" IS NOT NULL));
