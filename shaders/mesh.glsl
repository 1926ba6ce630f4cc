#version 330
// Instanced capsules (bones) and spheres (joints: a capsule whose two ends coincide).
// The unit mesh is a sphere split at its equator: vertices with in_end = 1 move to the bone's end.
#if defined VERTEX_SHADER
uniform mat4 m_proj;
uniform mat4 m_view;
uniform mat4 m_model;
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
    vec3 world = mix(in_a, in_b, in_end) + basis * (in_position * in_radius);
    vec4 world4 = m_model * vec4(world, 1.0);
    v_world = world4.xyz;
    v_normal = mat3(m_model) * (basis * in_normal);
    v_colour = in_colour * in_colour;  // sRGB -> linear (gamma 2 approximation, cheap)
    gl_Position = m_proj * m_view * world4;
}
#elif defined FRAGMENT_SHADER
uniform vec3 u_eye;
uniform vec3 u_light_dir;
uniform vec3 u_sky;
uniform vec3 u_ground;
uniform vec3 u_horizon;
uniform float u_fade_start;
uniform float u_fade_end;
in vec3 v_world;
in vec3 v_normal;
in vec3 v_colour;
out vec4 f_colour;
void main() {
    vec3 n = normalize(v_normal);
    vec3 view = normalize(u_eye - v_world);
    vec3 albedo = v_colour;
    float key = max(dot(n, u_light_dir), 0.0);
    float hemi = 0.5 + 0.5 * n.y;
    // crude ground occlusion: surfaces near the floor and facing down get less ambient light
    float occlusion = mix(0.55, 1.0, clamp(v_world.y / 0.35, 0.0, 1.0));
    vec3 ambient = mix(u_ground, u_sky, hemi) * occlusion;
    vec3 half_vec = normalize(u_light_dir + view);
    float spec_base = max(dot(n, half_vec), 0.0);
    spec_base *= spec_base; spec_base *= spec_base; spec_base *= spec_base; spec_base *= spec_base;
    float spec = spec_base * spec_base * 0.35;  // ~ cos^32
    float rim_base = 1.0 - max(dot(n, view), 0.0);
    float rim = rim_base * rim_base * rim_base * 0.35;
    vec3 linear = albedo * (ambient + 1.15 * key * vec3(1.0, 0.97, 0.92)) + spec + rim * u_sky;
    vec3 colour = sqrt(linear);
    float fade = smoothstep(u_fade_start, u_fade_end, length(v_world - u_eye));
    f_colour = vec4(mix(colour, u_horizon, fade), 1.0);
}
#endif
