#version 330
// The window's picture as one yuv420p video frame (BT.601, limited range), for the video encoder. The
// three planes share one single-channel target of (width / 2) x (3 * height) texels, laid out so that
// one read of the target, row after row, is the frame as the encoder takes it: Y, then U, then V, each
// top row first. A Y row (width bytes) fills two target rows, a chroma row (width / 2 bytes, the mean of
// a 2x2 block of pixels) one. Each plane is one draw over its band of the target (the viewport): the
// LUMA_PLANE variant for Y, the other for U and V (`u_difference`). No per-fragment branches, which
// software rasterisers pay for dearly. Video pixels outside the picture (a window made smaller while
// recording) are black.
#if defined VERTEX_SHADER
void main() {
    vec2 corner = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
    gl_Position = vec4(2.0 * corner - 1.0, 0.0, 1.0);
}
#elif defined FRAGMENT_SHADER
uniform sampler2D u_picture;  // the window's colours, bottom row first as GL keeps them; linear filter
uniform ivec2 u_picture_size;
uniform int u_band_start;  // the first target row of this plane's band
out float f_value;

// 1 for a pixel (column, row from the top) inside the picture, else 0; and where it is in the texture
float inside(ivec2 pixel) {
    return float(all(lessThan(pixel, u_picture_size)));
}

ivec2 texel_of(ivec2 pixel) {
    return ivec2(pixel.x, u_picture_size.y - 1 - pixel.y);
}

#if defined LUMA_PLANE
uniform int u_video_width;  // even
const vec3 LUMA = vec3(0.299, 0.587, 0.114);

void main() {
    ivec2 band = ivec2(gl_FragCoord.xy) - ivec2(0, u_band_start);
    ivec2 pixel = ivec2(band.x + (band.y & 1) * (u_video_width / 2), band.y / 2);
    vec3 rgb = inside(pixel) * texelFetch(u_picture, clamp(texel_of(pixel), ivec2(0), u_picture_size - 1), 0).rgb;
    f_value = (16.0 + 219.0 * dot(LUMA, rgb)) / 255.0;
}
#else
uniform vec3 u_difference;  // BT.601's B - Y (Cb) or R - Y (Cr) weights, scaled to [-0.5, 0.5]

void main() {
    ivec2 band = ivec2(gl_FragCoord.xy) - ivec2(0, u_band_start);
    ivec2 pixel = 2 * band;  // the block's top left pixel
    // the 2x2 block's mean in one linear fetch, at the corner its four pixels share
    vec2 corner = vec2(pixel.x + 1, u_picture_size.y - 1 - pixel.y);
    vec3 rgb = inside(pixel) * texture(u_picture, corner / vec2(u_picture_size)).rgb;
    f_value = (128.0 + 224.0 * dot(u_difference, rgb)) / 255.0;
}
#endif
#endif
