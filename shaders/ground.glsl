#version 330
// Ground plane: 1 m checkerboard box-filtered over each pixel's footprint (screen-space
// derivatives), so it stays crisp near and moire-free far, fading into the horizon colour with distance. Kept cheap: on software
// rasterisers this shader covers most of the screen.
#if defined VERTEX_SHADER
uniform mat4 m_proj;
uniform mat4 m_view;
uniform mat4 m_model;
uniform vec3 u_eye;
uniform float u_fade_start;
uniform float u_fade_end;
in vec2 in_position;
out vec2 v_ground;
out float v_fade;
void main() {
    vec4 world = m_model * vec4(in_position.x, 0.0, in_position.y, 1.0);
    v_ground = world.xz;
    // the fade is smooth, so per-vertex values on the subdivided plane are enough
    float fade = clamp((length(world.xyz - u_eye) - u_fade_start) / (u_fade_end - u_fade_start), 0.0, 1.0);
    v_fade = fade * fade * (3.0 - 2.0 * fade);
    gl_Position = m_proj * m_view * world;
}
#elif defined FRAGMENT_SHADER
uniform vec3 u_colour_a;
uniform vec3 u_colour_b;
uniform vec3 u_horizon;
in vec2 v_ground;
in float v_fade;
out vec4 f_colour;

void main() {
    vec2 p = v_ground;
    vec2 fw = fwidth(p) + 1e-4;
    // checker integrated over the pixel footprint (box filter): no moire far away
    vec2 i = 2.0 * (abs(fract((p - 0.5 * fw) * 0.5) - 0.5) - abs(fract((p + 0.5 * fw) * 0.5) - 0.5)) / fw;
    float checker = 0.5 - 0.5 * i.x * i.y;
    vec3 colour = mix(u_colour_a, u_colour_b, checker);
    f_colour = vec4(mix(colour, u_horizon, v_fade), 1.0);
}
#endif
