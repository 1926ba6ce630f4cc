#version 330
// Blob shadows: one soft disc on the ground per joint (instanced), darker and tighter when the joint is low.
#if defined VERTEX_SHADER
uniform mat4 m_proj;
uniform mat4 m_view;
uniform mat4 m_model;
in vec2 in_corner;
in vec3 in_centre;
in float in_radius;
out vec2 v_local;
out float v_strength;
void main() {
    float height = max(in_centre.y, 0.0);
    float radius = in_radius * (1.6 + 1.2 * height);
    v_strength = 0.38 * clamp(1.0 - height / 1.8, 0.15, 1.0);
    v_local = in_corner;
    vec3 world = vec3(in_centre.x + in_corner.x * radius, 0.004, in_centre.z + in_corner.y * radius);
    gl_Position = m_proj * m_view * m_model * vec4(world, 1.0);
}
#elif defined FRAGMENT_SHADER
in vec2 v_local;
in float v_strength;
out vec4 f_colour;
void main() {
    float r = length(v_local);
    float a = v_strength * pow(clamp(1.0 - r, 0.0, 1.0), 1.6);
    f_colour = vec4(0.05, 0.06, 0.09, a);
}
#endif
