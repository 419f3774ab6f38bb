import { Validate, ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { Expression, sql, SqlBool } from 'kysely';

/**
 * GET /posts?q=: PostgreSQL's full-text search over title and content, in the `simple` configuration, which splits
 * every language into words alike (no stemming, no stop words), so a word matches in its exact form, case aside.
 * The words are kept in `post.search` when the row is written (the trigger post_keep_answer, migration
 * 20261210100000_post_answer), indexed by post_search_idx: a search that walks an order checks each post's stored
 * words instead of splitting its text again.
 */
export function matchesSearch(q: string): Expression<SqlBool> {
  // A tsvector column is Unsupported in the Prisma schema, so not in the generated types: named here by hand.
  return sql<SqlBool>`${sql.ref('post.search')} @@ websearch_to_tsquery('simple'::regconfig, ${q})`;
}

/**
 * What a search may ask. Each word is one more lookup in the full-text index, and each phrase has PostgreSQL re-read
 * the stored words of every post holding all its words (word positions are not in the index): 70 ms for a phrase of two
 * words that 40,000 posts hold, 1.2 s before the words were stored. An alternative of negated terms alone matches nearly every post and reads the whole index. The statement
 * timeout (QUERY_STATEMENT_TIMEOUT_MS) cuts what is still slow within these bounds.
 */
export const SEARCH_LIMITS = { characters: 200, words: 10, phrases: 2, ors: 3, negated: 3 } as const;

interface SearchTerm {
  negated: boolean;
  phrase: boolean;
  words: number;
}

/** A word as PostgreSQL's parser splits one: a run of letters and digits. */
const WORD = /[\p{L}\p{M}\p{N}]+/gu;
/** A hyphenated word: PostgreSQL keeps the whole beside its parts (`spring-sale` is `spring-sale <-> spring <-> sale`). */
const HYPHENATED = /[\p{L}\p{M}\p{N}]-[\p{L}\p{M}\p{N}]/u;

/** The words PostgreSQL looks up for `text`: each run of letters and digits, and each hyphenated word once more whole. */
const countWords = (text: string) =>
  text.split(/\s+/).reduce((sum, token) => sum + (token.match(WORD)?.length ?? 0) + (HYPHENATED.test(token) ? 1 : 0), 0);

/**
 * The search's alternatives (split at `or`), each a list of terms, read the way `websearch_to_tsquery` reads it: text
 * in double quotes is a phrase (an unclosed quote runs to the end), `-` before a term negates it, and `or` between two
 * terms is an operator (first or last, it is a word).
 */
function readSearch(q: string): { alternatives: SearchTerm[][]; ors: number } {
  const alternatives: SearchTerm[][] = [[]];
  let ors = 0;
  let i = 0;
  const skipSpaces = () => {
    while (i < q.length && /\s/.test(q[i])) i += 1;
  };
  for (;;) {
    skipSpaces();
    if (i >= q.length) break;
    let negated = false;
    if (q[i] === '-') {
      negated = true;
      i += 1;
      skipSpaces();
      if (i >= q.length) break;
    }
    let term: SearchTerm;
    if (q[i] === '"') {
      const close = q.indexOf('"', i + 1);
      const end = close < 0 ? q.length : close;
      term = { negated, phrase: true, words: countWords(q.slice(i + 1, end)) };
      i = end + 1;
    } else {
      const start = i;
      while (i < q.length && !/\s/.test(q[i]) && q[i] !== '"') i += 1;
      const token = q.slice(start, i);
      const current = alternatives[alternatives.length - 1];
      skipSpaces();
      if (!negated && /^or$/i.test(token) && current.length > 0 && i < q.length) {
        ors += 1;
        alternatives.push([]);
        continue;
      }
      // A token of several words (`spring-sale`, `c_d`) is searched as the phrase of its parts: it costs what a phrase
      // costs. Some of these PostgreSQL keeps as one word (`a.b`, `me@x.com`), counted as phrases all the same.
      const words = countWords(token);
      term = { negated, phrase: (token.match(WORD)?.length ?? 0) > 1, words };
    }
    if (term.words > 0) alternatives[alternatives.length - 1].push(term);
  }
  return { alternatives, ors };
}

/** Why a search (`q`) asks too much; none when it is within SEARCH_LIMITS. */
export function searchProblems(q: string): string[] {
  const { alternatives, ors } = readSearch(q);
  const terms = alternatives.flat();
  const words = terms.reduce((sum, term) => sum + term.words, 0);
  const phrases = terms.filter((term) => term.phrase && term.words > 1).length;
  const negated = terms.filter((term) => term.negated).length;
  const problems: string[] = [];
  if (words > SEARCH_LIMITS.words) problems.push(`q holds ${words} words; at most ${SEARCH_LIMITS.words}`);
  if (phrases > SEARCH_LIMITS.phrases)
    problems.push(`q holds ${phrases} phrases (in quotes, or words joined like spring-sale); at most ${SEARCH_LIMITS.phrases}`);
  if (ors > SEARCH_LIMITS.ors) problems.push(`q holds ${ors} "or"; at most ${SEARCH_LIMITS.ors}`);
  if (negated > SEARCH_LIMITS.negated) problems.push(`q negates ${negated} terms; at most ${SEARCH_LIMITS.negated}`);
  if (alternatives.some((alternative) => alternative.length > 0 && alternative.every((term) => term.negated)))
    problems.push(
      alternatives.length > 1
        ? 'q needs a word that is not negated in each alternative (between "or"): one of only -words matches nearly every post'
        : 'q needs a word that is not negated: a search of only -words matches nearly every post',
    );
  return problems;
}

@ValidatorConstraint({ name: 'searchWithinLimits' })
class SearchWithinLimits implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value !== 'string' || searchProblems(value).length === 0;
  }

  defaultMessage(args: ValidationArguments): string {
    return typeof args.value === 'string' ? searchProblems(args.value).join('; ') : 'q must be a string';
  }
}

/** On `q`: refuses a search past SEARCH_LIMITS (400 naming `q`) before it reaches the database. */
export const IsSearchWithinLimits = () => Validate(SearchWithinLimits);
