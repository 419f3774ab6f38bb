-- Written by hand: GET /posts filters whose combination matches few posts or none (status + platform, accountId +
-- status, errorCategory + platform). Each filter alone has its own index, but PostgreSQL estimates a combination as
-- if its filters were independent: for two that exclude each other it expects thousands of matches and walks the
-- order (every post, when none matches), and a bitmap of both indexes reads every entry of each. Here every pair of
-- a post's values among status, platforms, accounts and error categories is one key: a combination is one lookup
-- in this index, which ANALYZE keeps statistics of (its most common keys, with their frequencies), so the planner
-- walks the order for a common pair and reads the few matches of a rare one through the index.

-- One key: the kind of pair (two letters), then the first value, length-prefixed, then the second (never ambiguous).
CREATE FUNCTION post_filter_key(kind text, first text, second text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN kind || length(first) || ':' || first || second;

-- Every pair of the post's values: status with each platform (sp), account (sa) and error category (se); each
-- platform with each account (pa) and error category (pe); each account with each error category (ae). In PL/pgSQL,
-- each key spelled as post_filter_key spells it: a SQL function with a subquery is not inlined, and cost 0.5 ms a
-- post where this costs a few microseconds. COST: at its default (100) the planner found a page of a pair that 2,500 of
-- 500,000 posts hold by walking 20,000 posts in order (6 times the time of reading the 2,500 through the index); at
-- this one it reads the matches of a pair up to a few thousand through the index, and walks the order beyond.
CREATE FUNCTION post_filter_pairs(status text, platforms text[], accounts text[], categories text[]) RETURNS text[]
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE COST 2000
AS $$
DECLARE
  keys text[] := '{}';
  p text;
  a text;
  e text;
BEGIN
  FOREACH p IN ARRAY coalesce(platforms, '{}') LOOP
    keys := array_append(keys, 'sp' || length(status) || ':' || status || p);
    FOREACH a IN ARRAY coalesce(accounts, '{}') LOOP
      keys := array_append(keys, 'pa' || length(p) || ':' || p || a);
    END LOOP;
    FOREACH e IN ARRAY coalesce(categories, '{}') LOOP
      keys := array_append(keys, 'pe' || length(p) || ':' || p || e);
    END LOOP;
  END LOOP;
  FOREACH a IN ARRAY coalesce(accounts, '{}') LOOP
    keys := array_append(keys, 'sa' || length(status) || ':' || status || a);
    FOREACH e IN ARRAY coalesce(categories, '{}') LOOP
      keys := array_append(keys, 'ae' || length(a) || ':' || a || e);
    END LOOP;
  END LOOP;
  FOREACH e IN ARRAY coalesce(categories, '{}') LOOP
    keys := array_append(keys, 'se' || length(status) || ':' || status || e);
  END LOOP;
  RETURN keys;
END
$$;

CREATE INDEX "post_filter_pairs_idx" ON "post" USING GIN (post_filter_pairs("status", "platform_names", "account_ids", "error_categories"));
