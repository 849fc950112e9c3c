"""What doctable observes and decides of a live stack, one capability per module, and their registry."""
