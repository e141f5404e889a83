"""A stadium oval (two straights, two half circles) written in each track format the loaders
read: the closed lap the format and car tests solve."""
from __future__ import annotations

import math

import numpy as np

STRAIGHT, RADIUS, WIDTH = 150.0, 50.0, 12.0
LENGTH = 2 * STRAIGHT + 2 * math.pi * RADIUS
"""[m] 614.16 m: the centreline's length."""
LAT0, LON0 = 47.2195, 14.7647


def stadium(ds=2.0, offset=0.0):
    """Points (n, 2) [m] every ``ds`` of the counter-clockwise stadium's centreline moved by
    ``offset`` [m] to the left (the inside), and their arc length on the centreline."""
    pts, s = [], np.arange(0.0, LENGTH, ds)
    for a in s:
        if a < STRAIGHT / 2:
            x, y, nx, ny = a, -RADIUS, 0.0, 1.0
        elif a < STRAIGHT / 2 + math.pi * RADIUS:
            th = (a - STRAIGHT / 2) / RADIUS
            x, y = STRAIGHT / 2 + RADIUS * math.sin(th), -RADIUS * math.cos(th)
            nx, ny = -math.sin(th), math.cos(th)
        elif a < 1.5 * STRAIGHT + math.pi * RADIUS:
            x, y, nx, ny = STRAIGHT / 2 - (a - STRAIGHT / 2 - math.pi * RADIUS), RADIUS, 0.0, -1.0
        elif a < 1.5 * STRAIGHT + 2 * math.pi * RADIUS:
            th = (a - 1.5 * STRAIGHT - math.pi * RADIUS) / RADIUS
            x, y = -STRAIGHT / 2 - RADIUS * math.sin(th), RADIUS * math.cos(th)
            nx, ny = math.sin(th), -math.cos(th)
        else:
            x, y, nx, ny = -STRAIGHT / 2 + (a - 1.5 * STRAIGHT - 2 * math.pi * RADIUS), -RADIUS, 0.0, 1.0
        pts.append((x + offset * nx, y + offset * ny))
    return np.array(pts), s


def to_lat_lon(P):
    """Latitude, longitude [deg] of points (n, 2) east/north of (LAT0, LON0) [m] (pyproj's
    inverse azimuthal equidistant projection)."""
    import pyproj
    inv = pyproj.Transformer.from_crs(
        f"+proj=aeqd +lat_0={LAT0} +lon_0={LON0} +datum=WGS84 +units=m", "EPSG:4326",
        always_xy=True)
    lon, lat = inv.transform(P[:, 0], P[:, 1])
    return np.asarray(lat), np.asarray(lon)


def write(fmt: str, folder):
    """The stadium, 12 m wide, in format ``fmt``: ``tum`` (x_m, y_m, w_tr_right_m, w_tr_left_m
    in a comment header), ``semicolon`` (x;y;z;width_left_m;width_right_m, decimal commas),
    ``own`` (the columns of trajectory.csv: s [m], x_spine [m], ...), ``gps`` (lat, lon, alt:
    no widths, give track_width=12), ``kml`` (left and right boundaries). Returns the path."""
    P, s = stadium()
    h = WIDTH / 2
    if fmt == "tum":
        path = folder / "stadium_tum.csv"
        path.write_text("# x_m,y_m,w_tr_right_m,w_tr_left_m\n"
                        + "".join(f"{x:.6f},{y:.6f},{h},{h}\n" for x, y in P))
    elif fmt == "semicolon":
        path = folder / "stadium_semicolon.csv"
        path.write_text("x;y;z;width_left_m;width_right_m\n" + "".join(
            f"{x:.6f};{y:.6f};100.0;{h};{h}\n".replace(".", ",") for x, y in P))
    elif fmt == "own":
        path = folder / "stadium_own.csv"
        path.write_text("s [m],x_spine [m],y_spine [m],z_spine [m],width_left [m],width_right [m]\n"
                        + "".join(f"{a:.6f},{x:.6f},{y:.6f},0,{h},{h}\n" for a, (x, y) in zip(s, P)))
    elif fmt == "gps":
        path = folder / "stadium_gps.csv"
        lat, lon = to_lat_lon(P)
        path.write_text("latitude,longitude,altitude\n" + "".join(
            f"{a:.9f},{b:.9f},420.0\n" for a, b in zip(lat, lon)))
    elif fmt == "kml":
        path = folder / "stadium.kml"
        lines = []
        for name, off in (("left", h), ("right", -h)):
            lat, lon = to_lat_lon(stadium(offset=off)[0])
            coords = " ".join(f"{b:.9f},{a:.9f},420.0" for a, b in zip(lat, lon))
            lines.append(f"<Placemark><name>{name}</name><LineString><coordinates>{coords}"
                         "</coordinates></LineString></Placemark>")
        path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.'
                        f'net/kml/2.2"><Document>{"".join(lines)}</Document></kml>')
    else:
        raise ValueError(fmt)
    return path
