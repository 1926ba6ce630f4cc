#version 330
// Thick anti-aliased line segments (instanced screen-space quads), width in pixels.
#if defined VERTEX_SHADER
uniform mat4 m_proj;
uniform mat4 m_view;
uniform mat4 m_model;
uniform vec2 u_viewport;
uniform float u_width;
in vec2 in_corner;  // x: 0 at start, 1 at end; y: -1 / +1 side
in vec3 in_start;
in vec3 in_end;
in vec4 in_colour;
out vec4 v_colour;
out float v_offset_px;
void main() {
    mat4 mvp = m_proj * m_view * m_model;
    vec4 c0 = mvp * vec4(in_start, 1.0);
    vec4 c1 = mvp * vec4(in_end, 1.0);
    // keep both ends in front of the camera so the screen direction stays valid
    c0.w = max(c0.w, 1e-3);
    c1.w = max(c1.w, 1e-3);
    vec2 s0 = c0.xy / c0.w * u_viewport * 0.5;
    vec2 s1 = c1.xy / c1.w * u_viewport * 0.5;
    vec2 dir = s1 - s0;
    dir = length(dir) > 1e-4 ? normalize(dir) : vec2(1.0, 0.0);
    vec2 normal = vec2(-dir.y, dir.x);
    float half_px = 0.5 * u_width + 1.0;
    vec4 clip = mix(c0, c1, in_corner.x);
    vec2 along = dir * (in_corner.x * 2.0 - 1.0) * 0.5 * u_width;  // round-ish caps
    clip.xy += (normal * in_corner.y * half_px + along) / u_viewport * 2.0 * clip.w;
    clip.z -= 0.0008 * clip.w;
    v_offset_px = in_corner.y * half_px;
    v_colour = in_colour;
    gl_Position = clip;
}
#elif defined FRAGMENT_SHADER
uniform float u_width;
in vec4 v_colour;
in float v_offset_px;
out vec4 f_colour;
void main() {
    float coverage = clamp(0.5 * u_width + 0.5 - abs(v_offset_px), 0.0, 1.0);
    f_colour = vec4(v_colour.rgb, v_colour.a * coverage);
}
#endif
