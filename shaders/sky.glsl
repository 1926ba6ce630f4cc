#version 330
// Background: vertical gradient by view-ray elevation, matching the ground's horizon colour.
// Drawn as a strip of horizontal bands from the horizon line (u_bottom, NDC y) to the top of the screen;
// below it the clear colour (the horizon colour) and the ground show. The colour is computed per vertex
// (the gradient is smooth), so the fragment stage is a plain copy: cheap on software rasterisers.
#if defined VERTEX_SHADER
uniform mat3 m_inv_view_rot;
uniform vec2 u_tan_half_fov;  // (tan(fov_y / 2) * aspect, tan(fov_y / 2))
uniform vec3 u_horizon;
uniform vec3 u_zenith;
uniform float u_bottom;
in vec2 in_position;
out vec3 v_colour;
void main() {
    vec2 screen = vec2(in_position.x, mix(u_bottom, 1.0, 0.5 * in_position.y + 0.5));
    vec3 ray = m_inv_view_rot * vec3(screen * u_tan_half_fov, -1.0);
    float elevation = clamp(ray.y * inversesqrt(dot(ray, ray)), 0.0, 1.0);
    v_colour = mix(u_horizon, u_zenith, sqrt(elevation));
    gl_Position = vec4(screen, 0.99999, 1.0);
}
#elif defined FRAGMENT_SHADER
in vec3 v_colour;
out vec4 f_colour;
void main() {
    f_colour = vec4(v_colour, 1.0);
}
#endif
