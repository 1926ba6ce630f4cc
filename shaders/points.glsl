#version 330
// Round anti-aliased point markers with a dark outline (instanced screen-space quads), size in pixels.
#if defined VERTEX_SHADER
uniform mat4 m_proj;
uniform mat4 m_view;
uniform mat4 m_model;
uniform vec2 u_viewport;
in vec2 in_corner;
in vec3 in_centre;
in vec4 in_colour;
in float in_size;
out vec4 v_colour;
out vec2 v_local;
out float v_radius_px;
void main() {
    vec4 clip = m_proj * m_view * m_model * vec4(in_centre, 1.0);
    float radius_px = 0.5 * in_size + 1.0;
    clip.xy += in_corner * radius_px / u_viewport * 2.0 * clip.w;
    clip.z -= 0.0015 * clip.w;
    v_colour = in_colour;
    v_local = in_corner * radius_px;
    v_radius_px = 0.5 * in_size;
    gl_Position = clip;
}
#elif defined FRAGMENT_SHADER
in vec4 v_colour;
in vec2 v_local;
in float v_radius_px;
out vec4 f_colour;
void main() {
    float r = length(v_local);
    float coverage = clamp(v_radius_px + 0.5 - r, 0.0, 1.0);
    float outline = smoothstep(v_radius_px - 2.5, v_radius_px - 1.0, r);
    vec3 colour = mix(v_colour.rgb, v_colour.rgb * 0.25, outline * 0.8);
    f_colour = vec4(colour, v_colour.a * coverage);
}
#endif
