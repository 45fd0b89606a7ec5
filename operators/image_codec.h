// Images for the image input ops (ImageInput): decoding JPEG with libjpeg
// (Debian's libjpeg-turbo), channel conversion and resizing, with the
// conventions Caffe2's ImageInput had through OpenCV, so a model trained on
// Caffe2's input pipeline sees the same pixels here:
//   * pixels are 8-bit, rows of interleaved channels (HWC), color images in
//     BGR order (cv::imdecode's), grayscale with one channel;
//   * gray -> BGR replicates the value; BGR -> gray is
//     round(0.299 R + 0.587 G + 0.114 B) (cv::cvtColor's weights);
//   * ResizeArea is cv::INTER_AREA: shrinking averages each output pixel's
//     footprint in the source (fractional overlaps weighted by area);
//     growing interpolates bilinearly with pixel centres at +0.5 (what
//     INTER_AREA does when it enlarges).
// Everything here is a pure function of its inputs; errors name `what` (the
// record they came from).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace doppio {

struct Image {
  int height = 0;
  int width = 0;
  int channels = 0;             // 1 (gray) or 3 (BGR)
  std::vector<uint8_t> pixels;  // height * width * channels, HWC

  const uint8_t* row(int y) const {
    return pixels.data() + static_cast<size_t>(y) * width * channels;
  }
};

// Whether `bytes` start like a JPEG file (SOI marker).
bool LooksLikeJpeg(const std::string& bytes);

// Decodes a JPEG into `channels` (1 or 3) channels. Throws a doppio::Error
// naming `what` for anything libjpeg refuses (truncated data, not a JPEG,
// an image over kMaxImagePixels).
Image DecodeJpeg(const std::string& bytes, int channels, const std::string& what);

// `image` as a baseline JPEG file of the given quality (1..100): grayscale
// for 1 channel, YCbCr from BGR for 3. For tools that write image DBs.
std::string EncodeJpeg(const Image& image, int quality);

// An uncompressed image (HWC bytes, 1 or 3 channels) with its pixels copied.
Image RawImage(const std::string& bytes, int height, int width, int channels,
               const std::string& what);

// `image` with `channels` channels (1: gray, 3: BGR).
Image ConvertChannels(const Image& image, int channels);

// The `height` x `width` window at (y, x).
Image CropImage(const Image& image, int y, int x, int height, int width);

// `image` resized to height x width (cv::INTER_AREA; see above).
Image ResizeArea(const Image& image, int height, int width);

// The largest image a record may decode to: a hostile header cannot make the
// op allocate more.
constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

}  // namespace doppio
