"""The domain: what a page, a namespace, a query and a principal are. Pure rules, no I/O, no plugins."""
