"""What each notebook's `your-turn` check compares the learner's answer against, one module per exercise.

A notebook and its test call the same function here, so the test that hands a check the likely wrong answer
checks it against exactly what the learner's answer meets.
"""
