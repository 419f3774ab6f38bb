-- Written by hand: each post's answer (what GET /posts and GET /posts/:id send for it) and the words `q` searches are
-- kept in the row when it is written, so that a read sends one column per post instead of building each post from
-- its columns (a third of a page's time in PostgreSQL was `to_char` of the timestamps, the account lookups and the
-- `extra` lookups), and a search that walks an order checks stored words instead of splitting each post's text again.
ALTER TABLE "post" ADD COLUMN "answer" TEXT, ADD COLUMN "search" tsvector;

-- The answer built from the row `post`, profileIds from its workspace's mirrored accounts: the expression of
-- src/mirror/posts/post-answer.ts, character for character (test/post-answer.e2e-spec.ts fails when they differ and
-- prints the statement that replaces this one).
CREATE FUNCTION post_answer(post post) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT ('{' || concat_ws(',', '"id":' || coalesce(("post"."extra" -> 'id')::text, coalesce(to_json("post"."id")::text, 'null')), '"userId":' || ("post"."extra" -> 'userId')::text, '"title":' || coalesce(("post"."extra" -> 'title')::text, coalesce(to_json("post"."title")::text, 'null')), '"content":' || coalesce(("post"."extra" -> 'content')::text, coalesce(to_json("post"."content")::text, 'null')), '"status":' || coalesce(("post"."extra" -> 'status')::text, coalesce(to_json("post"."status")::text, 'null')), '"scheduledFor":' || coalesce(("post"."extra" -> 'scheduledFor')::text, coalesce(to_json(to_char("post"."scheduled_for" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null')), '"timezone":' || ("post"."extra" -> 'timezone')::text, '"publishedAt":' || coalesce(("post"."extra" -> 'publishedAt')::text, coalesce(to_json(to_char("post"."published_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null')), '"platforms":' || coalesce(("post"."extra" -> 'platforms')::text, coalesce(to_json("post"."platforms")::text, 'null')), '"mediaItems":' || ("post"."extra" -> 'mediaItems')::text, '"tags":' || coalesce(("post"."extra" -> 'tags')::text, coalesce(to_json(to_jsonb("post"."tags"))::text, 'null')), '"hashtags":' || coalesce(("post"."extra" -> 'hashtags')::text, coalesce(to_json(to_jsonb("post"."hashtags"))::text, 'null')), '"mentions":' || ("post"."extra" -> 'mentions')::text, '"visibility":' || coalesce(("post"."extra" -> 'visibility')::text, coalesce(to_json("post"."visibility")::text, 'null')), '"metadata":' || ("post"."extra" -> 'metadata')::text, '"recycling":' || ("post"."extra" -> 'recycling')::text, '"recycledFromPostId":' || ("post"."extra" -> 'recycledFromPostId')::text, '"queuedFromProfile":' || ("post"."extra" -> 'queuedFromProfile')::text, '"queueId":' || ("post"."extra" -> 'queueId')::text, '"createdAt":' || coalesce(("post"."extra" -> 'createdAt')::text, coalesce(to_json(to_char("post"."pozy_created_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null')), '"updatedAt":' || coalesce(("post"."extra" -> 'updatedAt')::text, coalesce(to_json(to_char("post"."pozy_updated_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null')), (CASE WHEN "post"."extra" - ARRAY['id','userId','title','content','status','scheduledFor','timezone','publishedAt','platforms','mediaItems','tags','hashtags','mentions','visibility','metadata','recycling','recycledFromPostId','queuedFromProfile','queueId','createdAt','updatedAt','workspaceId','profileIds','pozyCreatedAt','pozyUpdatedAt','lastEventAt','syncedAt','deletedAt','sequence']::text[] <> '{}'::jsonb THEN (SELECT string_agg(to_json(e.key)::text || ':' || e.value::text, ',' ORDER BY e.n)
      FROM jsonb_each("post"."extra") WITH ORDINALITY AS e(key, value, n) WHERE e.key <> ALL(ARRAY['id','userId','title','content','status','scheduledFor','timezone','publishedAt','platforms','mediaItems','tags','hashtags','mentions','visibility','metadata','recycling','recycledFromPostId','queuedFromProfile','queueId','createdAt','updatedAt','workspaceId','profileIds','pozyCreatedAt','pozyUpdatedAt','lastEventAt','syncedAt','deletedAt','sequence']::text[])) END), '"workspaceId":' || coalesce(to_json("post"."workspace_id")::text, 'null'), '"profileIds":' || coalesce(to_json(((select coalesce(array_agg(distinct "a"."profile_id" order by "a"."profile_id"), '{}') as "ids" from unnest("post"."account_ids") as u(id) inner join lateral (select "account"."profile_id" from "account" where "account"."id" = "u"."id" and "account"."workspace_id" = "post"."workspace_id" limit 1) as "a" on true)))::text, 'null'), '"pozyCreatedAt":' || coalesce(to_json(to_char("post"."pozy_created_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null'), '"pozyUpdatedAt":' || coalesce(to_json(to_char("post"."pozy_updated_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null'), '"lastEventAt":' || coalesce(to_json(to_char("post"."last_event_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null'), '"syncedAt":' || coalesce(to_json(to_char("post"."synced_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null'), '"deletedAt":' || coalesce(to_json(to_char("post"."deleted_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'null'), '"sequence":' || coalesce(to_json("post"."sequence")::text, 'null')) || '}') $$;

-- Every insert and update of a post keeps both. An update that leaves the title and the content alone keeps the words.
CREATE FUNCTION post_keep_answer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.answer := post_answer(NEW);
  IF TG_OP = 'INSERT' OR NEW.title IS DISTINCT FROM OLD.title OR NEW.content IS DISTINCT FROM OLD.content THEN
    NEW.search := to_tsvector('simple'::regconfig, coalesce(NEW.title, '') || ' ' || coalesce(NEW.content, ''));
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER post_keep_answer BEFORE INSERT OR UPDATE ON "post" FOR EACH ROW EXECUTE FUNCTION post_keep_answer();

-- A post's profileIds are its mirrored accounts' profiles. An account mirrored for the first time rewrites its posts
-- through refreshProfiles (src/mirror/posts/post-mirror.repository.ts), under the advisory locks that keep it from
-- deadlocking with post writes. An account moved to another profile rewrites its workspace's posts that target it
-- here (the update runs post_keep_answer), locking them in id order, the order every post write locks in.
CREATE FUNCTION account_moved_rewrites_answers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "post" SET "answer" = NULL
   WHERE ("workspace_id", "id") IN (SELECT p."workspace_id", p."id" FROM "post" p
                                     WHERE p."workspace_id" = NEW."workspace_id" AND p."account_ids" @> ARRAY[NEW."id"]
                                     ORDER BY p."id" FOR UPDATE);
  RETURN NULL;
END $$;
CREATE TRIGGER account_moved_rewrites_answers AFTER UPDATE OF "profile_id" ON "account" FOR EACH ROW
  WHEN (OLD."profile_id" IS DISTINCT FROM NEW."profile_id") EXECUTE FUNCTION account_moved_rewrites_answers();

-- The posts mirrored before: written once more, by the trigger.
UPDATE "post" SET "answer" = NULL;

-- `q` reads the stored words through this index (it replaces the expression index of the same name).
DROP INDEX "post_search_idx";
CREATE INDEX "post_search_idx" ON "post" USING GIN ("search");

-- A word's frequency is known only for the lexemes ANALYZE keeps (100 times the statistics target). At the default,
-- with a unique lexeme or two per post, a rare word looked a hundred times more common than it is, and the planner
-- walked the primary key recomputing every post's text instead of reading this index.
ALTER TABLE "post" ALTER COLUMN "search" SET STATISTICS 1000;
