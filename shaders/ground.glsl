#version 330
// Ground plane: 1 m checkerboard anti-aliased over each pixel's footprint (screen-space derivatives),
// crisp near and moire-free far, fading into the horizon colour with distance. Kept cheap (one fract per
// axis, no depth test): on software rasterisers this shader covers most of the screen.
// With SHADOW_FOOTPRINT defined it draws instanced quads on the ground where characters' shadows may
// fall, the same colour darkened by the sun's shadow map: only those pixels pay for the lookups, and
// overlapping quads write the same value, so they never darken twice. HARD_SHADOW: one lookup a pixel.
#if defined VERTEX_SHADER
uniform mat4 m_proj;
uniform mat4 m_view;
uniform mat4 m_model;
uniform vec3 u_eye;
uniform float u_fade_start;
uniform float u_fade_end;
#if defined SHADOW_FOOTPRINT
in vec2 in_corner;  // -1..1
in vec2 in_centre;  // per instance: ground x, z
in vec2 in_axis_u;  // per instance: half extents as ground vectors
in vec2 in_axis_v;
#else
in vec2 in_position;
#endif
out vec2 v_ground;
out float v_fade;
void main() {
#if defined SHADOW_FOOTPRINT
    vec2 xz = in_centre + in_corner.x * in_axis_u + in_corner.y * in_axis_v;
    vec4 world = vec4(xz.x, 0.0, xz.y, 1.0);
#else
    vec4 world = m_model * vec4(in_position.x, 0.0, in_position.y, 1.0);
#endif
    v_ground = world.xz;
    // the fade is smooth, so per-vertex values on the subdivided plane are enough
    float fade = clamp((length(world.xyz - u_eye) - u_fade_start) / (u_fade_end - u_fade_start), 0.0, 1.0);
    v_fade = fade * fade * (3.0 - 2.0 * fade);
    gl_Position = m_proj * m_view * world;
}
#elif defined FRAGMENT_SHADER
#if defined SHADOW_FOOTPRINT
#include "lighting.glsl"
uniform vec3 u_shadow_colour;  // what the ground is multiplied by in full shadow
#endif
uniform vec3 u_colour_a;
uniform vec3 u_colour_b;
uniform vec3 u_horizon;
in vec2 v_ground;
in float v_fade;
out vec4 f_colour;

void main() {
    // signed distance (m) to the nearest cell edge per axis, ramped over one pixel footprint: a
    // one-pixel anti-aliased edge near, and far away (footprint >> cell) the amplitude falls as
    // 1 / footprint, so the checker averages out to flat grey instead of moire
    vec2 edge = abs(fract(v_ground * 0.5 + 0.25) - 0.5) - 0.25;
    vec2 side = clamp(edge * 4.0 / (fwidth(v_ground) + 1e-4), -1.0, 1.0);
    float checker = 0.5 - 0.5 * side.x * side.y;
    vec3 colour = mix(u_colour_a, u_colour_b, checker);
#if defined SHADOW_FOOTPRINT
#if defined HARD_SHADOW
    colour *= mix(u_shadow_colour, vec3(1.0), sun_visibility(vec3(v_ground.x, 0.0, v_ground.y), vec3(0.0)));
#else
    colour *= mix(u_shadow_colour, vec3(1.0), sun_visibility_soft(vec3(v_ground.x, 0.0, v_ground.y), vec3(0.0)));
#endif
#endif
    f_colour = vec4(mix(colour, u_horizon, v_fade), 1.0);
}
#endif
