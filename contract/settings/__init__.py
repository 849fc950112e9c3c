"""The settings file as doctable reads it: resolving an environment (its knobs, bindings and previews),
rendering it back, the declared environments, previews, the project's identity and what an environment may reach.
"""
