"""Pure math over arrays with leading batch dimensions: `quat` (quaternions, (w, x, y, z)), `mat3`
(3-vectors and 3x3 rotations for the compiled kernels), `planar` (yaw rotations of (x, z) pairs),
`easing` (smoothstep)."""
