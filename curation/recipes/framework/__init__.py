"""The recipe framework: a recipe declares itself (``declare``) and registers (``registry``);
generic services (``stages``, ``queues``, ``exports``, ``publish``), the one job dispatcher
(``jobs``) and generic pages (``views``, ``urls``, ``templates/curation/recipes/``) read the
declaration. See /README.md "Write your own recipe"."""
