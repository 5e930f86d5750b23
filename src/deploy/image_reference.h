// --image checked against the grammar of Docker image references (the distribution project's
// reference grammar, which docker, containerd and Kubernetes parse): name[:tag][@digest].
#pragma once
#include <string>

namespace plexus::deploy {

// Whether `image` is a reference:
//   reference := name [":" tag] ["@" digest]
//   name      := [domain "/"] path-component ["/" path-component]*      (at most 255 characters)
//   domain    := host [":" port]; host: DNS components [A-Za-z0-9-] joined by ".", or "[IPv6]"
//   path-component := [a-z0-9]+ (separator [a-z0-9]+)*, separator: "." | "_" | "__" | "-"+
//   tag       := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
//   digest    := algorithm ":" hex{32,}; algorithm: [A-Za-z][A-Za-z0-9]* joined by [+._-]
// "" when it is, else what is wrong, in words.
std::string image_reference_problem(const std::string& image);

// InputError "--image '...' is not an image reference: ..." (exit 2) unless it is one.
void check_image_reference(const std::string& image);

}  // namespace plexus::deploy
