"""Training sets from BVH folders: the built set (`dataset`), its parallel build (`build`), per-style
statistics (`statistics`), the data checks (`checks`), the cache (`dataset_cache`), normalisation and
the split by clip (`normalise`), clip labels from file names (`labels`), and the inspector (`inspector`,
`phase_report`)."""
