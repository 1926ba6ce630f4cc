#version 330
// Full-screen background: vertical gradient by view-ray elevation, matching the ground's horizon colour.
// The ray is built per vertex (it is linear across the screen), so the fragment work stays tiny.
#if defined VERTEX_SHADER
uniform mat3 m_inv_view_rot;
uniform vec2 u_tan_half_fov;  // (tan(fov_y / 2) * aspect, tan(fov_y / 2))
in vec2 in_position;
out vec3 v_ray;
void main() {
    v_ray = m_inv_view_rot * vec3(in_position * u_tan_half_fov, -1.0);
    gl_Position = vec4(in_position, 0.99999, 1.0);
}
#elif defined FRAGMENT_SHADER
uniform vec3 u_horizon;
uniform vec3 u_zenith;
in vec3 v_ray;
out vec4 f_colour;
void main() {
    float elevation = clamp(v_ray.y * inversesqrt(dot(v_ray, v_ray)), 0.0, 1.0);
    f_colour = vec4(mix(u_horizon, u_zenith, sqrt(elevation)), 1.0);
}
#endif
