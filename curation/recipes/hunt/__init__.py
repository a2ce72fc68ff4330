"""Hunts (issue 24): people write questions that fool vision-language models live, a blind model
keeps them honest, and a partner image where the answer flips makes every item vision-centric.
``recipe.py`` declares it."""
