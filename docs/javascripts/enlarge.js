// A picture shrunk to the page's width can have labels too small to read: every picture of an article
// that is not already a link becomes a link to its own file, which opens it full size.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("article img[src$='.svg']").forEach((img) => {
    if (img.closest("a")) {
      return;
    }
    const link = document.createElement("a");
    link.href = img.getAttribute("src");
    link.title = "open the picture full size";
    img.replaceWith(link);
    link.append(img);
  });
});
