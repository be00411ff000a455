// The reference for posed's Go network: libfacedetection's own C++ (built
// by reference_test.go from ../shared/models/libfacedetection) on a grey
// binary PGM whose grey is given as blue, green and red. It prints one line
// per face: score, box x y w h and the five landmarks, as the library's
// objectdetect_cnn returns them (boxes truncated to integers).
#include <cstdio>
#include <vector>
#include "facedetectcnn.h"

// Defined in facedetectcnn-model.cpp (its header declares a const variant).
std::vector<FaceRect> objectdetect_cnn(unsigned char* rgb, int width, int height, int step);

int main(int argc, char** argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: reference FILE.pgm\n");
		return 2;
	}
	FILE* f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	int w, h, maxval;
	char magic[3] = {0};
	if (fscanf(f, "%2s %d %d %d", magic, &w, &h, &maxval) != 4 || magic[0] != 'P' || magic[1] != '5' || maxval != 255) {
		fprintf(stderr, "%s: not an 8-bit binary PGM\n", argv[1]);
		return 1;
	}
	fgetc(f);
	std::vector<unsigned char> grey(size_t(w) * h), bgr(3 * size_t(w) * h);
	if (fread(grey.data(), 1, grey.size(), f) != grey.size()) {
		fprintf(stderr, "%s: truncated\n", argv[1]);
		return 1;
	}
	for (size_t i = 0; i < grey.size(); i++)
		bgr[3 * i] = bgr[3 * i + 1] = bgr[3 * i + 2] = grey[i];
	for (const FaceRect& r : objectdetect_cnn(bgr.data(), w, h, 3 * w)) {
		printf("%.7f %d %d %d %d", r.score, r.x, r.y, r.w, r.h);
		for (int i = 0; i < 10; i++)
			printf(" %d", r.lm[i]);
		printf("\n");
	}
	return 0;
}
