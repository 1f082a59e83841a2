"""How long an n-gram is, by default, in words of text and in tokens; and how many candidates a scan makes room for."""

TEXT_NGRAM = 13  # words: GPT-3's rule
TOKEN_NGRAM = 32  # tokens: the shortest of 13, 16, 20, 24 and 32 with which HumanEval's n-grams (llama3) are found in
# no document of the workshop's clean corpus, as its 13-word n-grams are not; at 13 tokens, 9 documents hold one (a
# list of numbers, `if n == 0: return 0`), since 13 tokens of code are about 6 words
FIRST_ROOM = 256, 1 << 16  # candidates a scan has room for at first: at least (a document holding a whole item has
# a window per word of it) and at most, growing with the input between; a scan that finds more is run again with room
# for all, so a large input with few candidates stays small in memory
