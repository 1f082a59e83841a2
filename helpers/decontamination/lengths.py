"""How long an n-gram is, by default, in words of text and in tokens; how short a pattern of words may be before it
matches ordinary text; and how many candidates a scan makes room for."""

TEXT_NGRAM = 13  # words: GPT-3's rule
TOKEN_NGRAM = 32  # tokens: the shortest of 13, 16, 20, 24 and 32 with which HumanEval's n-grams (llama3) are found in
# no document of the workshop's clean corpus, as its 13-word n-grams are not; at 13 tokens, 9 documents hold one (a
# list of numbers, `if n == 0: return 0`), since 13 tokens of code are about 6 words
FIRST_ROOM = 256, 1 << 16  # candidates a scan has room for at first: at least (a document holding a whole item has
# a window per word of it) and at most, growing with the input between; a scan that finds more is run again with room
# for all, so a large input with few candidates stays small in memory
SHORTEST_SAFE = 8  # words: a shorter pattern (a short --ngram, or a short item matched whole) matches ordinary text.
# HumanEval's n-grams in the workshop's clean corpus (1,645 documents): 3 words in 1,285 documents, 4 in 259, 5 in 75,
# 6 in 23, 8 in 9, 11 and 13 in none
