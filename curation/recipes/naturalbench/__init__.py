"""NaturalBench recipe (naturalbench.txt Sec. 3, App. A–C): mine confounding pairs, verify them,
draft questions with an LLM, keep those two annotators answer as intended, assemble balanced 2 × 2
samples, tag skills and export frozen dataset versions. ``recipe.py`` declares it."""
