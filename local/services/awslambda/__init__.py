"""Lambda's API as AWS answers it: functions, versions and aliases, event-source mappings."""
