"""FLOOR for the cold-start figure: a handler that imports only ``json``. Not a consumer."""
