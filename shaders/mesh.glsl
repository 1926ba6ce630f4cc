#version 330
// Instanced capsules (bones) and spheres (joints: a capsule whose two ends coincide), for the capsule
// and skeleton views. The unit mesh is a sphere split at its equator: vertices with in_end = 1 move to
// the bone's end. With SHADOW_PASS defined, depth only (the sun's shadow map).
#if defined VERTEX_SHADER
uniform mat4 m_proj;
uniform mat4 m_view;
in vec3 in_position;
in vec3 in_normal;
in float in_end;
in vec3 in_a;
in vec3 in_b;
in float in_radius;
in vec3 in_colour;
out vec3 v_world;
out vec3 v_normal;
out vec3 v_colour;
void main() {
    vec3 axis = in_b - in_a;
    float len = length(axis);
    vec3 y = len > 1e-5 ? axis / len : vec3(0.0, 1.0, 0.0);
    vec3 helper = abs(y.y) < 0.95 ? vec3(0.0, 1.0, 0.0) : vec3(1.0, 0.0, 0.0);
    vec3 x = normalize(cross(helper, y));
    vec3 z = cross(x, y);
    mat3 basis = mat3(x, y, z);
    v_world = mix(in_a, in_b, in_end) + basis * (in_position * in_radius);
    v_normal = basis * in_normal;
    v_colour = in_colour * in_colour;  // sRGB -> linear (gamma 2 approximation, cheap)
    gl_Position = m_proj * m_view * vec4(v_world, 1.0);
}
#elif defined FRAGMENT_SHADER
#if defined SHADOW_PASS
void main() {}
#else
#include "lighting.glsl"
uniform vec3 u_eye;
uniform vec3 u_horizon;
uniform float u_fade_start;
uniform float u_fade_end;
in vec3 v_world;
in vec3 v_normal;
in vec3 v_colour;
out vec4 f_colour;
void main() {
    vec3 n = normalize(v_normal);
    // crude ground occlusion: surfaces near the floor get less ambient light
    float occlusion = mix(0.6, 1.0, clamp(v_world.y / 0.35, 0.0, 1.0));
    vec3 colour = shade(v_colour, n, normalize(u_eye - v_world), v_world, occlusion);
    float fade = smoothstep(u_fade_start, u_fade_end, length(v_world - u_eye));
    f_colour = vec4(mix(colour, u_horizon, fade), 1.0);
}
#endif
#endif
