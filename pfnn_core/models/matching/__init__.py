"""Motion matching: a database of mocap frames searched by trajectory and feet, played with inertialized transitions."""
