#include "operators/image_codec.h"

#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/enforce.h"

namespace doppio {

namespace {

// libjpeg reports errors through error_exit, which must not return: it
// longjmps back to the decoder, which then throws. Only plain C state lives
// between setjmp and longjmp (the C++ objects are made outside).
struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void OnJpegError(j_common_ptr info) {
  JpegError* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

void IgnoreJpegMessage(j_common_ptr) {}

// The decoding proper, in a function without C++ objects of its own.
// Returns false with `error->message` set on failure. `pixels` is sized from
// the header by `reserve`, called once the dimensions are known.
template <typename Reserve>
bool DecodeJpegInto(const std::string& bytes, int channels, JpegError* error, int* height,
                    int* width, Reserve reserve) {
  jpeg_decompress_struct info;
  info.err = jpeg_std_error(&error->manager);
  error->manager.error_exit = OnJpegError;
  error->manager.output_message = IgnoreJpegMessage;
  if (setjmp(error->jump)) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  // libjpeg-turbo decodes straight to BGR (OpenCV's order) or to gray.
  info.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_EXT_BGR;
  jpeg_start_decompress(&info);
  *height = static_cast<int>(info.output_height);
  *width = static_cast<int>(info.output_width);
  uint8_t* pixels = reserve(*height, *width);
  if (pixels == nullptr) {
    std::snprintf(error->message, sizeof(error->message),
                  "image of %d x %d pixels is larger "
                  "than the limit of %lld pixels",
                  *height, *width, static_cast<long long>(kMaxImagePixels));
    jpeg_destroy_decompress(&info);
    return false;
  }
  const size_t stride = static_cast<size_t>(*width) * channels;
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = pixels + static_cast<size_t>(info.output_scanline) * stride;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

// Compression, in a function without C++ objects of its own (see above).
bool EncodeJpegInto(const Image& image, int quality, JpegError* error, unsigned char** out,
                    unsigned long* size) {
  jpeg_compress_struct info;
  info.err = jpeg_std_error(&error->manager);
  error->manager.error_exit = OnJpegError;
  error->manager.output_message = IgnoreJpegMessage;
  if (setjmp(error->jump)) {
    jpeg_destroy_compress(&info);
    return false;
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, out, size);
  info.image_width = static_cast<JDIMENSION>(image.width);
  info.image_height = static_cast<JDIMENSION>(image.height);
  info.input_components = image.channels;
  info.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_EXT_BGR;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  const size_t stride = static_cast<size_t>(image.width) * image.channels;
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(image.pixels.data()) + info.next_scanline * stride;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  return true;
}

uint8_t RoundToByte(double value) {
  return static_cast<uint8_t>(std::min(255.0, std::max(0.0, std::floor(value + 0.5))));
}

// Source interval [begin, end) of output index `i` when `in` pixels shrink
// to `out`, in source pixel units.
struct Span {
  double begin;
  double end;
};

Span Footprint(int i, int in, int out) {
  const double scale = static_cast<double>(in) / out;
  return {i * scale, (i + 1) * scale};
}

Image ShrinkArea(const Image& image, int height, int width) {
  Image out{height, width, image.channels, {}};
  out.pixels.resize(static_cast<size_t>(height) * width * image.channels);
  const int c = image.channels;
  std::vector<double> sum(c);
  for (int y = 0; y < height; ++y) {
    const Span ys = Footprint(y, image.height, height);
    for (int x = 0; x < width; ++x) {
      const Span xs = Footprint(x, image.width, width);
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int sy = static_cast<int>(ys.begin); sy < ys.end && sy < image.height; ++sy) {
        const double wy = std::min<double>(sy + 1, ys.end) - std::max<double>(sy, ys.begin);
        for (int sx = static_cast<int>(xs.begin); sx < xs.end && sx < image.width; ++sx) {
          const double w = wy * (std::min<double>(sx + 1, xs.end) - std::max<double>(sx, xs.begin));
          const uint8_t* p = image.row(sy) + static_cast<size_t>(sx) * c;
          for (int k = 0; k < c; ++k) sum[k] += w * p[k];
        }
      }
      const double area = (ys.end - ys.begin) * (xs.end - xs.begin);
      uint8_t* q = out.pixels.data() + (static_cast<size_t>(y) * width + x) * c;
      for (int k = 0; k < c; ++k) q[k] = RoundToByte(sum[k] / area);
    }
  }
  return out;
}

// Bilinear sampling position of output index `i`: the two source indices
// and the weight of the second.
struct Tap {
  int first;
  int second;
  double weight;
};

Tap LinearTap(int i, int in, int out) {
  double source = (i + 0.5) * in / out - 0.5;
  source = std::max(0.0, std::min<double>(source, in - 1));
  const int first = static_cast<int>(source);
  return {first, std::min(first + 1, in - 1), source - first};
}

Image GrowLinear(const Image& image, int height, int width) {
  Image out{height, width, image.channels, {}};
  out.pixels.resize(static_cast<size_t>(height) * width * image.channels);
  const int c = image.channels;
  for (int y = 0; y < height; ++y) {
    const Tap ty = LinearTap(y, image.height, height);
    for (int x = 0; x < width; ++x) {
      const Tap tx = LinearTap(x, image.width, width);
      const uint8_t* p00 = image.row(ty.first) + static_cast<size_t>(tx.first) * c;
      const uint8_t* p01 = image.row(ty.first) + static_cast<size_t>(tx.second) * c;
      const uint8_t* p10 = image.row(ty.second) + static_cast<size_t>(tx.first) * c;
      const uint8_t* p11 = image.row(ty.second) + static_cast<size_t>(tx.second) * c;
      uint8_t* q = out.pixels.data() + (static_cast<size_t>(y) * width + x) * c;
      for (int k = 0; k < c; ++k) {
        const double top = p00[k] + tx.weight * (p01[k] - p00[k]);
        const double bottom = p10[k] + tx.weight * (p11[k] - p10[k]);
        q[k] = RoundToByte(top + ty.weight * (bottom - top));
      }
    }
  }
  return out;
}

}  // namespace

bool LooksLikeJpeg(const std::string& bytes) {
  return bytes.size() >= 3 && static_cast<uint8_t>(bytes[0]) == 0xFF &&
         static_cast<uint8_t>(bytes[1]) == 0xD8 && static_cast<uint8_t>(bytes[2]) == 0xFF;
}

Image DecodeJpeg(const std::string& bytes, int channels, const std::string& what) {
  DOPPIO_ENFORCE(channels == 1 || channels == 3, "cannot decode to ", channels, " channels");
  DOPPIO_ENFORCE(LooksLikeJpeg(bytes), what,
                 " is not a JPEG image (it starts with no JPEG "
                 "marker; ",
                 bytes.size(), " bytes); only JPEG is decoded");
  Image image;
  image.channels = channels;
  JpegError error;
  error.message[0] = '\0';
  const bool ok = DecodeJpegInto(
      bytes, channels, &error, &image.height, &image.width, [&](int height, int width) -> uint8_t* {
        if (static_cast<int64_t>(height) * width > kMaxImagePixels) {
          return nullptr;
        }
        image.pixels.resize(static_cast<size_t>(height) * width * channels);
        return image.pixels.data();
      });
  DOPPIO_ENFORCE(ok, "cannot decode the JPEG image of ", what, ": ", error.message);
  return image;
}

std::string EncodeJpeg(const Image& image, int quality) {
  DOPPIO_ENFORCE(image.channels == 1 || image.channels == 3, "cannot encode ", image.channels,
                 " channels as JPEG");
  DOPPIO_ENFORCE(
      image.height > 0 && image.width > 0 &&
          image.pixels.size() == static_cast<size_t>(image.height) * image.width * image.channels,
      "cannot encode a ", image.height, " x ", image.width, " image of ", image.pixels.size(),
      " bytes");
  DOPPIO_ENFORCE(quality >= 1 && quality <= 100, "JPEG quality must be in [1, 100], got ", quality);
  JpegError error;
  error.message[0] = '\0';
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const bool ok = EncodeJpegInto(image, quality, &error, &buffer, &size);
  std::string encoded;
  if (ok) encoded.assign(reinterpret_cast<const char*>(buffer), size);
  std::free(buffer);
  DOPPIO_ENFORCE(ok, "cannot encode a JPEG image: ", error.message);
  return encoded;
}

Image RawImage(const std::string& bytes, int height, int width, int channels,
               const std::string& what) {
  DOPPIO_ENFORCE(channels == 1 || channels == 3, what, ": a raw image has 1 or 3 channels, not ",
                 channels);
  DOPPIO_ENFORCE(height > 0 && width > 0 && static_cast<int64_t>(height) * width <= kMaxImagePixels,
                 what, ": a raw image of ", height, " x ", width, " pixels");
  const size_t size = static_cast<size_t>(height) * width * channels;
  DOPPIO_ENFORCE(bytes.size() == size, what, ": a raw ", height, " x ", width, " x ", channels,
                 " image needs ", size, " bytes, the record has ", bytes.size());
  return Image{height, width, channels, std::vector<uint8_t>(bytes.begin(), bytes.end())};
}

Image ConvertChannels(const Image& image, int channels) {
  if (image.channels == channels) return image;
  Image out{image.height, image.width, channels, {}};
  const size_t count = static_cast<size_t>(image.height) * image.width;
  out.pixels.resize(count * channels);
  for (size_t i = 0; i < count; ++i) {
    if (channels == 3) {
      std::fill_n(out.pixels.data() + 3 * i, 3, image.pixels[i]);
    } else {
      const uint8_t* bgr = image.pixels.data() + 3 * i;
      out.pixels[i] = RoundToByte(0.114 * bgr[0] + 0.587 * bgr[1] + 0.299 * bgr[2]);
    }
  }
  return out;
}

Image CropImage(const Image& image, int y, int x, int height, int width) {
  DOPPIO_ENFORCE(y >= 0 && x >= 0 && height > 0 && width > 0 && y + height <= image.height &&
                     x + width <= image.width,
                 "crop of ", height, " x ", width, " at (", y, ", ", x, ") outside a ",
                 image.height, " x ", image.width, " image");
  Image out{height, width, image.channels, {}};
  const size_t stride = static_cast<size_t>(width) * image.channels;
  out.pixels.resize(stride * height);
  for (int row = 0; row < height; ++row) {
    std::memcpy(out.pixels.data() + row * stride,
                image.row(y + row) + static_cast<size_t>(x) * image.channels, stride);
  }
  return out;
}

Image ResizeArea(const Image& image, int height, int width) {
  DOPPIO_ENFORCE(height > 0 && width > 0, "cannot resize to ", height, " x ", width);
  if (height == image.height && width == image.width) return image;
  if (height <= image.height && width <= image.width) return ShrinkArea(image, height, width);
  return GrowLinear(image, height, width);
}

}  // namespace doppio
