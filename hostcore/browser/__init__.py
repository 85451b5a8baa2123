"""The browser's side of the core: people's sessions, CSRF, security headers, safe redirects.

Pages themselves come from plugins (``register_routes``); this package gives them one session
cookie, one sign-in path and one set of protections, so every plugin's pages behave alike.
"""
