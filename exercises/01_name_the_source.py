# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file.
# check("01") in the notebook saves that cell here, so the shell runs the same code:
#   python -m sandbox.grading check 01
def answers():
    """Which scenario is behind each timeline? One name from candidates() per letter."""
    # YOUR CODE HERE
    raise NotImplementedError("exercise 01: write this part, then run check(\"01\")")
