"""Every setting once (:mod:`.table`) and how its values become the engine's and the
gate's settings (:mod:`.settings_map`): above the engine, below every front end."""
