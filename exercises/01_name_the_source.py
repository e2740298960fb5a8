# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file: write your answer in that cell.
# check("01") in the notebook saves the cell here, so the shell runs the same code:
#   python -m sandbox.grading check 01
# It replaces this file; if you edited the file by hand, it keeps your version as 01_name_the_source.py.bak.
# fingerprint of the code below, as written: f0c8c17df6365b32
def answers():
    """Which scenario is behind each timeline? A dict: each letter to one name from candidates()."""
    named = {"A": None, "B": None, "C": None, "D": None, "E": None, "F": None}  # a name in place of each None
    # YOUR CODE HERE
    raise NotImplementedError("exercise 01: write this part, then run check(\"01\")")
    return named
