"""How long an n-gram is, by default, in words of text and in tokens."""

TEXT_NGRAM = 13  # words: GPT-3's rule
TOKEN_NGRAM = 32  # tokens: the shortest of 13, 16, 20, 24 and 32 with which HumanEval's n-grams (llama3) are found in
# no document of the workshop's clean corpus, as its 13-word n-grams are not; at 13 tokens, 9 documents hold one (a
# list of numbers, `if n == 0: return 0`), since 13 tokens of code are about 6 words
