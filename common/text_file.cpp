#include "common/text_file.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace cs {

std::string unusual_path_kind(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) return "no such file or folder";
  if (ec) return ec.message();
  switch (st.type()) {
    case fs::file_type::regular:
    case fs::file_type::directory:
      return "";
    case fs::file_type::character:
      return "a character device (such as /dev/zero)";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a named pipe (FIFO)";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file or folder";
  }
}

void require_file_or_folder(const std::string& flag, const std::string& path,
                            const std::string& what) {
  const std::string kind = unusual_path_kind(path);
  if (kind.empty()) return;
  if (kind == "no such file or folder") throw UserError(flag + " '" + path + "': " + kind);
  throw UserError(flag + " '" + path + "': " + kind + ", not a " + what + " or a folder of them");
}

void require_readable_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(path + ": is a directory, not a " + what);
  if (unusual_path_kind(path) == "no such file or folder")
    throw UserError(path + ": cannot open " + what + ": no such file");
}

int open_for_reading(const std::string& path, const std::string& what) {
  require_readable_file(path, what);
  std::error_code ec;
  const bool pipe = std::filesystem::is_fifo(path, ec);
  // A pipe is opened without blocking (a blocking open waits for a writer, however long), then
  // waits for its writer's first bytes or close; Linux reports neither while no writer has come.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (pipe ? O_NONBLOCK : 0));
  if (fd < 0) throw UserError(path + ": cannot open " + what + ": " + std::strerror(errno));
  if (!pipe) return fd;
  pollfd p{fd, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&p, 1, kPipeWriterWaitSeconds * 1000);
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) {
    ::close(fd);
    throw UserError(path + ": a named pipe (FIFO) that nothing wrote to in " +
                    std::to_string(kPipeWriterWaitSeconds) + " s; not read (start the " + what +
                    "'s writer first, or give a file)");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string read_text_file(const std::string& path, const std::string& what, int64_t limit) {
  const int fd = open_for_reading(path, what);
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int error = got < 0 ? errno : 0;
      ::close(fd);
      if (error != 0) throw UserError(path + ": cannot read " + what + ": " + std::strerror(error));
      return text;
    }
    if (static_cast<int64_t>(text.size()) + got > limit) {
      ::close(fd);
      throw UserError(path + ": " + what + " is larger than " + std::to_string(limit >> 20) +
                      " MiB; not read (the bound keeps a file given by mistake from exhausting "
                      "memory)");
    }
    text.append(buf, static_cast<size_t>(got));
  }
}

}  // namespace cs
