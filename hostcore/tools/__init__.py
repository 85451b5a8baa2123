"""The tools of the contract: default plugins, one module per service module of the same name,
each a set of thin, typed functions over one service call."""
