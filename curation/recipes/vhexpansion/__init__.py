"""VHExpansion recipe (vhexpansion.txt Sec. 3): negations checked by people, common and
adversarial image perturbations, expanded test sets for the evaluation app and for fine-tuning.
``recipe.py`` declares it."""
