#version 330
// Skinned body meshes, instanced: every instance is one character whose joint matrices are one row of
// `u_skin` (3 RGBA texels per joint: the rows of its 3x4 bind-to-pose matrix). Linear blend skinning of
// four joints per vertex. With SHADOW_PASS defined, depth only (the sun's shadow map).
#if defined VERTEX_SHADER
uniform mat4 m_proj;
uniform mat4 m_view;
uniform sampler2D u_skin;
in vec3 in_position;
in vec3 in_normal;
in ivec4 in_joints;
in vec4 in_weights;
in vec4 in_material;  // scores of shirt, trousers, shoes, hair against skin (0): the largest wins
in float in_row;  // per instance: the character's row in u_skin
in vec3 in_shirt;  // per instance: shirt colour (sRGB)
out vec3 v_world;
out vec3 v_normal;
out vec4 v_material;
out vec3 v_shirt;

void main() {
    int row = int(in_row);
    vec4 r0 = vec4(0.0), r1 = vec4(0.0), r2 = vec4(0.0);
    for (int k = 0; k < 4; ++k) {
        int column = 3 * in_joints[k];
        float w = in_weights[k];
        r0 += w * texelFetch(u_skin, ivec2(column, row), 0);
        r1 += w * texelFetch(u_skin, ivec2(column + 1, row), 0);
        r2 += w * texelFetch(u_skin, ivec2(column + 2, row), 0);
    }
    vec4 p = vec4(in_position, 1.0);
    v_world = vec3(dot(r0, p), dot(r1, p), dot(r2, p));
    v_normal = vec3(dot(r0.xyz, in_normal), dot(r1.xyz, in_normal), dot(r2.xyz, in_normal));
    v_material = in_material;
    v_shirt = in_shirt;
    gl_Position = m_proj * m_view * vec4(v_world, 1.0);
}
#elif defined FRAGMENT_SHADER
#if defined SHADOW_PASS
void main() {}
#else
#include "lighting.glsl"
uniform vec3 u_eye;
uniform vec3 u_palette[5];  // skin, shirt (unused: per instance), trousers, shoes, hair; sRGB
uniform vec3 u_horizon;
uniform float u_fade_start;
uniform float u_fade_end;
in vec3 v_world;
in vec3 v_normal;
in vec4 v_material;
in vec3 v_shirt;
out vec4 f_colour;

void main() {
    // the interpolated scores cross zero along smooth lines: crisp hems and hairlines at any mesh density
    vec3 albedo = u_palette[0];
    float best = 0.0;
    if (v_material.x > best) { best = v_material.x; albedo = v_shirt; }
    if (v_material.y > best) { best = v_material.y; albedo = u_palette[2]; }
    if (v_material.z > best) { best = v_material.z; albedo = u_palette[3]; }
    if (v_material.w > best) { best = v_material.w; albedo = u_palette[4]; }
    vec3 n = normalize(v_normal);
    vec3 to_eye = normalize(u_eye - v_world);
    float occlusion = mix(0.6, 1.0, clamp(v_world.y / 0.4, 0.0, 1.0));
    vec3 colour = shade(albedo * albedo, n, to_eye, v_world, occlusion);
    float fade = smoothstep(u_fade_start, u_fade_end, length(v_world - u_eye));
    f_colour = vec4(mix(colour, u_horizon, fade), 1.0);
}
#endif
#endif
