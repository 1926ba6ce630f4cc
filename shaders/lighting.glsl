// Shared by the character programs (included by `load_program`): the sun with its shadow map, a sky /
// ground hemisphere for ambient light, a little specular and rim, gamma 2 as a cheap sRGB curve.
uniform vec3 u_light_dir;  // unit, toward the sun
uniform vec3 u_sun;  // linear colour of the sun
uniform vec3 u_sky;  // ambient from above
uniform vec3 u_ground;  // ambient from below
uniform sampler2DShadow u_shadow_map;
uniform mat4 m_light;  // world -> shadow map (x, y in 0..1, depth 0..1)
uniform vec2 u_shadow_texel;  // 1 / shadow map size
uniform float u_normal_offset;  // metres along the normal before the lookup (acne without peter-panning)
uniform float u_shadow_bias;  // depth units

vec3 shadow_coordinates(vec3 world, vec3 normal) {
    vec3 p = (m_light * vec4(world + normal * u_normal_offset, 1.0)).xyz;
    p.z = min(p.z - u_shadow_bias, 1.0);
    return p;
}

bool outside_shadow_map(vec3 p) {
    return p.x <= 0.0 || p.x >= 1.0 || p.y <= 0.0 || p.y >= 1.0;
}

// one bilinear depth comparison: a 2x2-texel percentage-closer filter (each lookup costs a software
// rasteriser about as much as the rest of the shading, so the characters take one)
float sun_visibility(vec3 world, vec3 normal) {
    vec3 p = shadow_coordinates(world, normal);
    return outside_shadow_map(p) ? 1.0 : texture(u_shadow_map, p);
}

// four bilinear comparisons: a 3x3-texel soft edge, for the shadows on the ground
float sun_visibility_soft(vec3 world, vec3 normal) {
    vec3 p = shadow_coordinates(world, normal);
    if (outside_shadow_map(p)) {
        return 1.0;
    }
    vec2 d = 0.75 * u_shadow_texel;
    return 0.25 * (texture(u_shadow_map, vec3(p.xy + vec2(-d.x, -d.y), p.z))
                 + texture(u_shadow_map, vec3(p.xy + vec2(d.x, -d.y), p.z))
                 + texture(u_shadow_map, vec3(p.xy + vec2(-d.x, d.y), p.z))
                 + texture(u_shadow_map, vec3(p.xy + vec2(d.x, d.y), p.z)));
}

// albedo in linear space; returns display (gamma) colour
vec3 shade(vec3 albedo, vec3 n, vec3 to_eye, vec3 world, float occlusion) {
    float facing = dot(n, u_light_dir);
    float key = max(facing, 0.0);
    float visible = key > 0.0 ? sun_visibility(world, n) : 0.0;
    vec3 ambient = mix(u_ground, u_sky, 0.5 + 0.5 * n.y) * occlusion;
    vec3 half_vec = normalize(u_light_dir + to_eye);
    float spec_base = max(dot(n, half_vec), 0.0);
    spec_base *= spec_base; spec_base *= spec_base; spec_base *= spec_base; spec_base *= spec_base;
    float spec = spec_base * spec_base * 0.25 * visible;  // ~ cos^32
    float rim_base = 1.0 - max(dot(n, to_eye), 0.0);
    float rim = rim_base * rim_base * rim_base * 0.25 * occlusion;
    vec3 linear = albedo * (ambient + key * visible * u_sun) + spec * u_sun + rim * u_sky;
    return sqrt(linear);
}
