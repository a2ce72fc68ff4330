"""HTML views: ``workspace`` for crowdworkers, ``curator`` for curators and researchers."""
