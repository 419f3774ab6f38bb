import { searchProblems } from './post-search';

describe('searchProblems: what a search (q) may ask', () => {
  it.each([
    'coffee',
    'spring sale',
    '"spring sale" -winter',
    'lemon or sugar',
    'a or b or c or d',
    'a -b -c -d',
    'one two three four five six seven eight nine ten',
    '"a b c d e f g h i j"',
    // `or` first or last is a word, as websearch_to_tsquery reads it.
    'or coffee',
    'coffee or',
    // Nothing to search for matches nothing, cheaply.
    '',
    '!!!',
    'Frühlingsangebot распродажа',
    'admin-token-that-must-never-be-logged',
  ])('accepts %j', (q) => {
    expect(searchProblems(q)).toEqual([]);
  });

  it.each([
    ['one two three four five six seven eight nine ten eleven', ['q holds 11 words; at most 10']],
    // A hyphenated word is its parts and itself whole, as PostgreSQL's parser splits it.
    ['e-mail a b c d e f g h', ['q holds 11 words; at most 10']],
    // A token of several words is a phrase of them: it costs a phrase's re-reading.
    ['a_b c_d e_f', ['q holds 3 phrases (in quotes, or words joined like spring-sale); at most 2']],
    ['spring-sale "a b" x-y', ['q holds 3 phrases (in quotes, or words joined like spring-sale); at most 2']],
    ['"a b" "c d" "e f"', ['q holds 3 phrases (in quotes, or words joined like spring-sale); at most 2']],
    ['a or b or c or d or e', ['q holds 4 "or"; at most 3']],
    ['a -b -c -d -e', ['q negates 4 terms; at most 3']],
    ['-coffee', ['q needs a word that is not negated: a search of only -words matches nearly every post']],
    ['- coffee', ['q needs a word that is not negated: a search of only -words matches nearly every post']],
    ['-"coffee tea"', ['q needs a word that is not negated: a search of only -words matches nearly every post']],
    ['coffee or -tea', [expect.stringMatching(/^q needs a word that is not negated in each alternative/)]],
    ['-or', ['q needs a word that is not negated: a search of only -words matches nearly every post']],
  ])('refuses %j', (q, problems) => {
    expect(searchProblems(q)).toEqual(problems);
  });

  it('reads an unclosed quote as a phrase to the end, and quotes inside a word as the phrase they open', () => {
    expect(searchProblems('"a b" "c d" "e f')).toEqual(['q holds 3 phrases (in quotes, or words joined like spring-sale); at most 2']);
    expect(searchProblems('x"a b"y "c d" "e f"')).toEqual(['q holds 3 phrases (in quotes, or words joined like spring-sale); at most 2']);
    // Inside quotes, `-` and `or` are words of the phrase.
    expect(searchProblems('"-a or b"')).toEqual([]);
  });
});
