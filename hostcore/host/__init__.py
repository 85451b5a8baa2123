"""The host: settings, the plugin manager, and the Host that owns backends and registries."""
