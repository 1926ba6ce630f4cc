"""The blind A/B page's videos: the same drives rendered with one model each by the headless viewer
(`python -m app.ab JOB.json`, run by `pfnn-eval --ab`)."""
