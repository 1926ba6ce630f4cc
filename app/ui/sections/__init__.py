"""The panel's sections, one file each, in the panel's order: `model`, `style`, `transport` (the Time
section), `view`, `tune`, `train`, `playback`, `record`, `editor`, `capture`, `stats`. Each
`*_section(state)` only reads and writes the one `ViewerState` and queues requests for the viewer."""
