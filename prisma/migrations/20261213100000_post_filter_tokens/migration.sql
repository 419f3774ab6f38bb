-- Written by hand: every value of a post that GET /posts filters on by equality, as one token each, so that any
-- combination of those filters is one lookup in one GIN index (post_filter_tokens_idx, next migration) instead of an
-- index per filter or per pair of filters (src/mirror/posts/post-filter-tokens.ts spells the same tokens).
--
-- A token is a letter naming the filter, a colon, then the value: w workspace, s status, p platform, a account,
-- e error category, t tag, h hashtag, v visibility, m has media, x:deleted for a deleted post. The letter keeps two
-- filters' values apart; the value follows whole, so no two tokens can collide.
--
-- In PL/pgSQL: a SQL function with a subquery per array is not inlined and costs far more a row. COST: the planner
-- reads the tokens through the index, never recomputing them row by row to check a condition.
CREATE FUNCTION post_filter_tokens(workspace text, status text, platforms text[], accounts text[], categories text[],
                                   tags text[], hashtags text[], visibility text, has_media boolean, deleted boolean)
  RETURNS text[] LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE COST 1000
AS $$
DECLARE
  tokens text[] := ARRAY['w:' || workspace, 's:' || status, 'm:' || has_media::text];
  v text;
BEGIN
  IF visibility IS NOT NULL THEN tokens := tokens || ('v:' || visibility); END IF;
  IF deleted THEN tokens := tokens || 'x:deleted'::text; END IF;
  FOREACH v IN ARRAY coalesce(platforms, '{}') LOOP tokens := tokens || ('p:' || v); END LOOP;
  FOREACH v IN ARRAY coalesce(accounts, '{}') LOOP tokens := tokens || ('a:' || v); END LOOP;
  FOREACH v IN ARRAY coalesce(categories, '{}') LOOP tokens := tokens || ('e:' || v); END LOOP;
  FOREACH v IN ARRAY coalesce(tags, '{}') LOOP tokens := tokens || ('t:' || v); END LOOP;
  FOREACH v IN ARRAY coalesce(hashtags, '{}') LOOP tokens := tokens || ('h:' || v); END LOOP;
  RETURN tokens;
END
$$;
