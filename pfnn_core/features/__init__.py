"""The feature contract shared by training and the runtime: rates and trajectory offsets, gait labels
(`contract`), the named-slice `FeatureLayout` (`layout`), and one clip's network samples (`samples`)."""
